"""The refill's sub-steps on the deepseek CPU workload, each timed alone (thread CPU clock) in
the refill's order after a fresh reload and post-load; then the public refill after another.
Medians and minima in microseconds (``take`` repeats ``anyis`` and ``guard``; ``free`` is
dropping the engine's 496 fresh tensors, which the refill's rebind does; ``warm_*`` repeats a
step at once on the same tensors). Runs against any tree of the eighteenth or nineteenth
session (it reads the holder table in its order, as the base tree's refill did).

    PYTHONPATH=TREE python3 benchmarks/results/refill43/substeps.py 41
"""

from __future__ import annotations

import gc
import json
import operator
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime.engine import foreach_copy
from derivgraph.tools.bench import _workload


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    reload(0)
    post_load()
    plan.refill()
    holders, table = plan.holders, plan._refill_table
    times: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.thread_time_ns()
        out = fn(*args)
        times.setdefault(name, []).append((time.thread_time_ns() - t0) / 1e3)
        return out

    def anyis(picked: list[Any]) -> bool:
        return any(map(operator.is_, picked, table.storages))

    def flatcopy(taken: Any) -> None:
        for a, b, run in taken.flat:
            run.copy(taken.theirs[a:b])

    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(repeat):
            reload(i)
            post_load()
            checks = holders._source_checks
            timed("hops_stale", holders.hops._stale)
            timed("src_held", holders._sources_held, checks)
            timed("src_addr", checks[2].intact)
            timed("restore", plan.tensors.startup_addresses().intact)
            current = timed("read", holders.table.current)
            timed("warm_read", holders.table.current)
            picked = current if table._pick is None else table._pick(current)
            timed("anyis", anyis, picked)
            timed("guard", table._layouts.match, picked)
            timed("warm_guard", table._layouts.match, picked)
            taken = timed("take", table.take, current)
            timed("flatcopy", flatcopy, taken)
            timed("foreach", foreach_copy, taken.ours, taken.theirs, taken.spans)
            timed("setitems", holders.table.rebind, holders.table.every, current, True)
            timed("table_settle", holders.table.settle)
            timed("hops_settle", holders.hops.settle)
            timed("src_settle", holders._source_watch.settle)
            taken = picked = None
            timed("free", current.clear)
            reload(i)
            post_load()
            timed("refill", plan.refill)
    gc.unfreeze()
    out = {k: (round(statistics.median(v), 1), round(min(v), 1)) for k, v in times.items()}
    print(json.dumps({"repeat": repeat, "median_min_us": out}))  # noqa: T201 - a script


if __name__ == "__main__":
    main()
