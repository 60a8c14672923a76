"""spike47 extras: what the contract's lazy and skipped parts cost at 100k.

Medians over 6 models, 3 per layout (a prove fact: its sweep over one source column, 12
samples).

* ``prove_<fact>``: each fact sweep of :func:`spike.prove` alone (every source column).
* ``ids_all``: every derived tensor's id (``list(plan.entries)``: what describe/rows/trace list).
* ``expand_all``: every lazy ``Entry`` made (a consumer that reads every per-tensor record).
* ``guard_declared_ids``: the guard's set of declared tensor ids, from the columns (no Entry).
* ``bitcheck_eager``: the compile's bit check done per column: the formulas evaluated eagerly
  over the stacked sources and compared bit for bit with the pass's storages.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from itertools import chain, repeat
from operator import getitem
from typing import Any

import torch

sys.path.insert(0, "benchmarks/results/spike47")
from spike import _FACTS, _PARAMS, _PTR, ColumnPlan  # noqa: E402

from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def _t(fn: Any) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def one_round(layout: str, res: dict[str, list[float]], layers: int, spec: Any) -> None:
    """One model compiled with ``layout``; each extra timed once into ``res``."""
    model = scaling_model(layers)
    gc.collect()
    gc.disable()
    try:
        plan = ColumnPlan(model, spec, layout)
        st = plan.stack
        params = list(map(_PARAMS, st.dicts))
        for s in ("scale", "weight"):
            col = list(map(getitem, params, repeat(s)))
            for fact, f in _FACTS:
                res.setdefault(f"prove_{fact}", []).append(_t(lambda f=f, c=col: set(map(f, c))))
            res.setdefault("prove_storage_nbytes", []).append(_t(lambda c=col: set(map(
                torch.UntypedStorage.nbytes, map(torch.Tensor.untyped_storage, c)))))
            res.setdefault("prove_ptrs", []).append(_t(lambda c=col: list(map(_PTR, c))))
        res.setdefault("guard_declared_ids", []).append(_t(lambda: set(map(
            id, chain.from_iterable(plan.columns.values())))))
        res.setdefault("ids_all", []).append(_t(lambda: list(plan.entries)))

        def bitcheck() -> None:
            s = torch.stack(st.src["scale"])
            w = torch.stack(st.src["weight"])
            for name, want in (("inv", 1.0 / s), ("prod", s * w)):
                got = torch.stack(plan.columns[name])
                assert torch.equal(got.view(torch.int32), want.view(torch.int32)), name
        res.setdefault("bitcheck_eager", []).append(_t(bitcheck))
        res.setdefault(f"expand_all_{layout}", []).append(
            _t(lambda: [plan.entries[k] for k in plan.entries]))
    finally:
        gc.enable()


def main() -> None:
    layers, spec = 25_000, scaling_spec()
    res: dict[str, list[float]] = {}
    for r in range(6):
        one_round("rows" if r % 2 == 0 else "column", res, layers, spec)
        gc.collect()
    summary = {k: round(statistics.median(v), 4) for k, v in res.items()}
    print(json.dumps({"raw": res, "median_s": summary}, indent=1))


if __name__ == "__main__":
    main()
