"""Where a guard restore's time goes on the 61-layer reference model (CPU, thread clock).

Each part is timed right after a reload of its own (load + post-load step [+ refill]), as the
restore runs in ``bench_guard.py``: caches as cold as a real reload leaves them; medians of
``--repeat`` rounds in one process. The parts read the guard's internals (this is a breakdown,
not an API).

* plan+guard: the sweeps without version tags, ``lengths`` (every watched container's length)
  and ``items`` (the identity of every watched dict item, a C-level ``dict.get`` sweep); with
  them, ``tags`` (one gather of every watched dict's version tag) and ``dirty`` (the sweep the
  restore runs: the tags, then the lengths and items of the dicts whose tag moved);
  ``storage_each`` (every startup tensor's storage address read from Python) and ``storage``
  (the restore's check: one gather of their storage words where proven,
  :mod:`derivgraph.addresses`, else one C++ loop over them); ``settle`` (the tags
  re-based after a restore); and ``restore`` itself.
* guard-only: the restore in phases: ``survey`` (the sweeps, the diff of the changed containers,
  the template descent of the rebuilt objects), ``classify``, ``apply`` (one ``_foreach_copy_``,
  the holders re-pointed), ``release`` (the engine's tensors and the restore's records let go)
  and ``settle``.

    python3 benchmarks/bench_guard_parts.py --repeat 9
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from itertools import repeat
from typing import Any

import torch
from bench_guard import _workload

from derivgraph.guard import Guard
from derivgraph.guard.holders import MISSING
from derivgraph.guard.report import GuardReport
from derivgraph.planner import compile_plan

_ns = time.thread_time_ns


def _plan_parts(guard: Guard, model: Any) -> dict[str, Callable[[], Any]]:
    assert guard.watch is not None
    sweep, watch = guard.watch.sweep, guard.watch
    tensors = guard._ptrs[0]
    parts = {
        "lengths": lambda: list(map(len, sweep.live_by_address)),
        "items": lambda: list(map(dict.get, sweep.acc_dicts, sweep.acc_keys,
                                  repeat(MISSING, len(sweep.acc_keys)))),
        "dirty": watch._dirty,
        "storage_each": lambda: list(map(torch.Tensor.data_ptr, tensors)),
        "storage": guard.storage_kept,
        "settle": sweep.settle,
        "restore": lambda: guard.restore(model),
    }
    if sweep.tags is not None:
        parts["tags"] = sweep.tags.changed
    return parts


def _phases(guard: Guard) -> dict[str, float]:
    """One guard-only restore, timed by phase (the body of ``Guard.restore``)."""
    watch = guard.watch
    assert watch is not None
    report, guard._claimed = GuardReport(), {}
    t0 = _ns()
    survey = watch.survey()
    t1 = _ns()
    watch.survey = lambda kept=survey: kept  # the classification reuses this survey
    try:
        actions = guard._plan_watched((), report)
    finally:
        del watch.survey
    t2 = _ns()
    with torch.no_grad():
        guard._apply(actions, report)
    t3 = _ns()
    del actions, survey, report  # noqa: F821
    guard._claimed = {}
    t4 = _ns()
    watch.sweep.settle()
    t5 = _ns()
    return {"survey": t1 - t0, "classify": t2 - t1, "apply": t3 - t2, "release": t4 - t3,
            "settle": t5 - t4}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=61)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out: dict[str, dict[str, float]] = {}
    for with_plan in (True, False):
        model, load, post, specs = _workload("reference", args.layers, 0.25)
        plan = compile_plan(model, specs) if with_plan else None
        guard = Guard()
        guard.snapshot(model, declared=list(plan.declared().values()) if plan else [])
        gc.collect()
        gc.freeze()
        times: dict[str, list[float]] = {}
        for i in range(args.repeat):
            parts = _plan_parts(guard, model) if plan is not None else {"restore": None}
            for name, fn in parts.items():
                load(i)
                start = _ns()
                post()
                times.setdefault("post", []).append(_ns() - start)
                if plan is not None:
                    plan.refill()
                    start = _ns()
                    fn()
                    times.setdefault(name, []).append(_ns() - start)
                    guard.restore(model)
                else:
                    for phase, ns in _phases(guard).items():
                        times.setdefault(phase, []).append(ns)
        gc.unfreeze()
        out["plan+guard" if with_plan else "guard-only"] = {
            f"{k}_us": round(statistics.median(v) / 1e3, 1) for k, v in times.items()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
