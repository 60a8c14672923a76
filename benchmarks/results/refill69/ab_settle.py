"""In-process A/B of ``plan.refill()`` on the deepseek workload (61 layers, 496 derived), CPU:
arm ``base`` (main's ``Holders.rebind`` / ``_rebind_stale``, loaded from the base tree's
``holders.py``: every watch settled after the rebind) against arm ``mine`` (this tree's: the
hops' and sources' watches kept where the rebind stored into none of their dicts),
interleaved per round (the order alternating), the same weights for both arms of a round.
Each refill is timed by the thread's CPU clock; after it, every derived value is compared bit
for bit with the other arm's, and every watch must be settled (its snapshot the current tags).

    PYTHONPATH=. python3 benchmarks/results/refill69/ab_settle.py ROUNDS [verify: 0|1] [BASE]

``BASE``: the base tree (default ``/tmp/base69``). Prints one JSON line.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import sys
import time

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime.holders import Holders
from derivgraph.tools.bench import _workload


def _base_holders(tree: str) -> type:
    """The base tree's ``Holders`` class (its module imports this tree's other modules)."""
    spec = importlib.util.spec_from_file_location(
        "base_holders", os.path.join(tree, "derivgraph/runtime/holders.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Holders


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 101
    verify = bool(int(sys.argv[2])) if len(sys.argv) > 2 else False
    base = _base_holders(sys.argv[3] if len(sys.argv) > 3 else "/tmp/base69")
    methods = {"base": (base.rebind, base._rebind_stale),
               "mine": (Holders.rebind, Holders._rebind_stale)}
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    holders = plan.holders
    for i in range(3):
        reload(i)
        post_load()
        plan.refill(verify=verify)
    clock = time.thread_time_ns
    times: dict[str, list[float]] = {arm: [] for arm in methods}
    mismatches = unsettled = 0
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for r in range(rounds):
            values = {}
            for arm in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
                reload(r)
                post_load()
                Holders.rebind, Holders._rebind_stale = methods[arm]
                t0 = clock()
                plan.refill(verify=verify)
                t1 = clock()
                times[arm].append((t1 - t0) / 1e3)
                values[arm] = [e.storage.clone() for e in plan.entries.values()]
                watches = (holders.hops.watch, holders._source_watch, holders.table.watch)
                unsettled += not all(w is not None and w.unchanged() for w in watches)
            mismatches += not all(map(torch.equal, values["base"], values["mine"]))
    Holders.rebind, Holders._rebind_stale = methods["mine"]
    deltas = [m - b for b, m in zip(times["base"], times["mine"])]
    print(json.dumps({
        "rounds": rounds, "verify": verify, "load": os.getloadavg()[0],
        "median_us": {arm: round(statistics.median(v), 1) for arm, v in times.items()},
        "paired_delta_us": round(statistics.median(deltas), 1),
        "mine_lower": f"{sum(d < 0 for d in deltas)} of {rounds}",
        "mismatches": mismatches, "unsettled": unsettled}))


if __name__ == "__main__":
    main()
