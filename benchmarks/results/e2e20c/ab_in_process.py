"""In one process, per reload: ``eb637cd``'s code of the four functions branch ``e2e20c``
changed, or this tree's, alternating with vLLM alone; thread CPU time of the plugin's pieces.

The whole-reload ratio cannot separate two trees on a loaded 2-core machine; this compares the
changed code on the same model under the same load, reload by reload. Run from the tree root:

    PYTHONPATH=$PWD python3 benchmarks/results/e2e20c/ab_in_process.py 121 OUT.json
"""

from __future__ import annotations

import gc
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import chain, repeat
from pathlib import Path
from typing import Any

ROOT = Path.cwd()


def _all_same(dicts: list[Any], keys: list[Any], values: list[Any]) -> bool:
    from derivgraph.guard import sweep as swm

    if list(map(len, dicts)) != list(map(len, values)):
        return False
    return all(map(swm._is, chain.from_iterable(map(dict.values, dicts)),
                   chain.from_iterable(values))) and all(
        map(swm._is, chain.from_iterable(dicts), chain.from_iterable(keys)))


def _old_compare(self: Any, dicts: set[int]) -> tuple[list[int], list[int], list[Any]]:
    """``Sweep._compare`` as at ``eb637cd``."""
    from derivgraph.guard import sweep as swm
    from derivgraph.guard.holders import MISSING

    live, keys, values = self.live, self.keys, self.values
    order = sorted(dicts)
    if _all_same(list(map(live.__getitem__, order)), list(map(keys.__getitem__, order)),
                 list(map(values.__getitem__, order))):
        return [], [], []
    order = [i for i in order if not swm._same(live[i], keys[i], values[i])]
    resized = [i for i, n, was in zip(order, map(len, map(live.__getitem__, order)),
                                       map(self.length.__getitem__, order)) if n != was]
    acc = list(chain.from_iterable(map(self.acc_of.__getitem__, order)))
    now = list(map(swm._get, map(self.acc_dicts.__getitem__, acc),
                   map(self.acc_keys.__getitem__, acc), repeat(MISSING, len(acc))))
    hits = swm._mismatches(list(map(swm._is, now, map(self.acc_values.__getitem__, acc))))
    return resized, [acc[j] for j in hits], [now[j] for j in hits]


def _old_changed(self: Any) -> list[int]:
    """``DictVersions.changed`` as at ``eb637cd``."""
    import numpy as np

    if self._tags is None:
        return []
    self._last = now = self._read()
    return np.flatnonzero(now != self._tags).tolist()  # type: ignore[no-any-return]


def _old_kept(self: Any) -> bool:
    """``Addresses.kept`` as at ``eb637cd``."""
    import numpy as np

    impls, stores = self._expected
    return bool(np.array_equal(self._impls[self._impl_index], impls)) and bool(
        np.array_equal(self._stores[self._store_index], stores))


def _old_addresses(tensors: list[Any], ptrs: list[int]) -> bool:
    """The source address sweep as at ``eb637cd``."""
    import torch

    return list(map(torch.Tensor.data_ptr, tensors)) == ptrs


def _switcher() -> Callable[[str], None]:
    from derivgraph import dict_versions as dvm
    from derivgraph.guard import addresses as adm
    from derivgraph.guard import sweep as swm
    from derivgraph.runtime import holders as hm

    new = (swm.Sweep._compare, dvm.DictVersions.changed, adm.Addresses.kept,
           hm._addresses_equal)
    old = (_old_compare, _old_changed, _old_kept, _old_addresses)

    def use(which: str) -> None:
        code = old if which == "base" else new
        swm.Sweep._compare, dvm.DictVersions.changed, adm.Addresses.kept = code[:3]
        hm._addresses_equal = code[3]

    return use


def main() -> None:
    repeats, out_path = int(sys.argv[1]), Path(sys.argv[2])
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
    os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
    logging.basicConfig(level=logging.WARNING)
    sys.path.insert(0, str(ROOT))
    import torch
    from vllm.model_executor.model_loader.reload import inplace

    from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
    from vllm_integration import session

    torch.set_num_threads(1)
    use = _switcher()
    now = time.thread_time_ns
    pieces: dict[tuple[str, str], list[float]] = {}
    current = ["base"]

    def wrap(owner: Any, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = now()
            try:
                return fn(*args, **kwargs)
            finally:
                pieces.setdefault((current[0], label), []).append((now() - start) / 1e3)

        setattr(owner, name, timed)

    times: dict[str, list[float]] = {"off": [], "base": [], "branch": []}
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        state = session.state_for(model)
        wrap(session, "complete", "complete")
        wrap(state.guard, "restore", "guard.restore")
        wrap(state.guard.watch, "survey", "guard.survey")
        wrap(state.plan.holders, "sources_intact", "sources_intact")
        wrap(type(state.plan), "refill", "plan.refill")

        def reload(i: int, variant: str) -> float:
            current[0] = variant
            if variant != "off":
                use(variant)
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if variant == "off" else "refill"
            start = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
            return (now() - start) / 1e6

        for variant in times:
            reload(1, variant)
        pieces.clear()
        gc.collect()
        gc.freeze()
        variants = list(times)
        for i in range(repeats):
            for variant in (variants if i % 2 == 0 else variants[::-1]):
                times[variant].append(reload(i, variant))
        use("branch")
        reload(0, "branch")
        moved = state.plan.moved()
    out: dict[str, Any] = {"repeat": repeats, "moved_after": len(moved), "reload_ms": {},
                           "pieces_us": {}}
    for variant, values in times.items():
        out["reload_ms"][variant] = {"median": round(statistics.median(values), 3),
                                     "min": round(min(values), 3)}
    for variant in ("base", "branch"):
        row = out["reload_ms"][variant]
        row["paired_cost_median_us"] = round(statistics.median(
            (a - b) * 1e3 for a, b in zip(times[variant], times["off"])), 1)
        row["ratio_median"] = round(statistics.median(times[variant])
                                    / statistics.median(times["off"]), 3)
    for (variant, label), values in sorted(pieces.items(), key=lambda kv: kv[0][::-1]):
        if variant != "off":
            out["pieces_us"][f"{label} [{variant}]"] = {
                "median": round(statistics.median(values), 1),
                "q10": round(statistics.quantiles(values, n=10)[0], 1),
                "min": round(min(values), 1)}
    out["runs_ms"] = {k: [round(x, 3) for x in v] for k, v in times.items()}
    out_path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "runs_ms"}, indent=1))  # noqa: T201


if __name__ == "__main__":
    main()
