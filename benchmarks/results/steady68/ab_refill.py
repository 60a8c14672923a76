"""In-process A/B of ``plan.refill()`` on the deepseek workload (61 layers, 496 derived), CPU:
arm ``slow`` (``steady.ENABLED = False``: main's path, ``Plan.run``'s refill) against arm
``steady`` (the steady entry), interleaved per round (the order alternating), the same weights
for both arms of a round. Each refill is timed by the thread's CPU clock; after it, every
derived value is compared bit for bit with the other arm's (untimed), and the steady arm must
not have called ``Plan.run``.

    PYTHONPATH=. python3 benchmarks/results/steady68/ab_refill.py ROUNDS [verify: 0|1] [tags]

With ``tags``: the arms are two steady entries instead, ``sweep`` (each watched table's items
checked by the direct sweep alone) and ``tags`` (the library's: the watch's tags first, the
sweep where they moved), the entry swapped in before each refill.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime import steady
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench import _workload


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    verify = bool(int(sys.argv[2])) if len(sys.argv) > 2 else False
    tags = len(sys.argv) > 3 and sys.argv[3] == "tags"
    arms = ("sweep", "tags") if tags else ("slow", "steady")
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    runs = []
    run = Plan.run

    def counted(self: Plan, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        runs.append(1)
        return run(self, *a, **k)

    for i in range(3):  # the steady entry is made at the second refill
        reload(i)
        post_load()
        plan.refill(verify=verify)
    assert plan._steady is not None, plan._steady_refused
    entries = {"tags": plan._steady}
    if tags:
        first = steady._tags_first
        steady._tags_first = lambda watch, watched, sweep: first(watch, False, sweep)
        entries["sweep"] = steady.build(plan, plan._last_take[1])
        steady._tags_first = first
        assert "unchanged()" not in entries["sweep"].source
    clock = time.thread_time_ns
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    mismatches = fallbacks = 0
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for r in range(rounds):
            values = {}
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                reload(r)
                post_load()
                steady.ENABLED = arm != "slow"
                if tags:
                    plan._steady = entries[arm]
                Plan.run = counted if arm != "slow" else run
                runs.clear()
                t0 = clock()
                report = plan.refill(verify=verify)
                t1 = clock()
                Plan.run = run
                steady.ENABLED = True
                fallbacks += bool(runs)
                times[arm].append((t1 - t0) / 1e3)
                values[arm] = ([e.storage.clone() for e in plan.entries.values()],
                               {k: v for k, v in report.as_dict().items() if k != "seconds"})
            a, b = values[arms[0]], values[arms[1]]
            same = a[1] == b[1] and all(torch.equal(x.view(-1).view(torch.uint8),
                                                    y.view(-1).view(torch.uint8))
                                        for x, y in zip(a[0], b[0]))
            mismatches += not same
    gc.unfreeze()
    new, old = times[arms[1]], times[arms[0]]
    wins = sum(s < o for s, o in zip(new, old))
    print(json.dumps({  # noqa: T201 - a benchmark script reports on stdout
        "rounds": rounds, "verify": verify, "load": os.getloadavg(),
        "median_us": {k: round(statistics.median(v), 1) for k, v in times.items()},
        "min_us": {k: round(min(v), 1) for k, v in times.items()},
        "paired_delta_median_us": round(statistics.median(
            s - o for s, o in zip(new, old)), 1),
        f"{arms[1]}_lower_in": f"{wins} of {rounds}", "mismatches": mismatches,
        "steady_fallbacks": fallbacks}))


if __name__ == "__main__":
    main()
