"""Warm-cache in-process A/B of ``plan.refill()`` on the deepseek workload (CPU): no reload
between refills; instead every holder is handed one of two fixed sets of the engine's fresh
tensors (one store sweep, untimed), so the refill sees the steady state with warm caches: what
remains is mostly the Python between the native calls. Arms ``slow`` (``steady.ENABLED =
False``) and ``steady``, interleaved, order alternating; thread CPU time.

    PYTHONPATH=. python3 benchmarks/results/steady68/warm_refill.py [verify: 0|1]
"""

from __future__ import annotations

import gc
import json
import operator
import os
import statistics
import sys
import time
from collections import deque

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime import steady
from derivgraph.tools.bench import _workload


def main() -> None:
    verify = bool(int(sys.argv[1])) if len(sys.argv) > 1 else False
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    for i in range(3):
        reload(i)
        post_load()
        plan.refill()
    table = plan.holders.table
    fresh = []
    for i in range(2):
        reload(i)
        post_load()
        fresh.append(table.current())
    plan.refill()
    times: dict[str, list[float]] = {"slow": [], "steady": []}
    gc.freeze()
    with torch.no_grad():
        for r in range(400):
            for arm in (("slow", "steady") if r % 2 else ("steady", "slow")):
                deque(map(operator.setitem, table.dicts, table.keys, fresh[r % 2]), 0)
                steady.ENABLED = arm == "steady"
                t0 = time.thread_time_ns()
                plan.refill(verify=verify)
                times[arm].append((time.thread_time_ns() - t0) / 1e3)
                steady.ENABLED = True
    deltas = [a - b for a, b in zip(times["steady"], times["slow"])]
    print(json.dumps({  # noqa: T201 - a benchmark script reports on stdout
        "verify": verify, "load": os.getloadavg(),
        "median_us": {k: round(statistics.median(v), 1) for k, v in times.items()},
        "paired_delta_median_us": round(statistics.median(deltas), 1),
        "steady_lower_in": f"{sum(d < 0 for d in deltas)} of {len(deltas)}"}))


if __name__ == "__main__":
    main()
