"""CPU deepseek (derivgraph bench's workload, 496 derived): per round the engine's post-load,
then plan.refill() on a captured plan, each on the thread CPU clock; per round
(post-load + refill) / post-load, its median with a 95 % bootstrap interval (refill22).

``alone``: the same post-load on a second copy of the workload that has no plan, in the same
rounds. With a plan, the engine's post-load frees nothing (the plan holds the startup tensors
its holders held) and the refill frees the engine's fresh ones when it re-binds; without a
plan the post-load frees the tensors it replaces itself. ``over_alone`` is per round
(post-load + refill) / that post-load.

    PYTHONPATH=TREE python3 post_load_refill.py --repeat 61 --json OUT.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import time
from pathlib import Path

import torch

from derivgraph import compile_plan
from derivgraph.tools.bench import _workload


def _boot(values: list[float], seed: int = 0, boot: int = 2000) -> list[float]:
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(boot))
    return [meds[int(0.025 * boot)], meds[int(0.975 * boot)]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=61)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the thread's CPU clock sees every op
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    plan.run()
    plan.capture()
    _m, _s, reload_alone, post_load_alone, _l = _workload("cpu", "deepseek", 61, None)
    for i in range(3):
        reload(i)
        post_load()
        plan.refill()
    gc.collect()
    gc.freeze()
    post, refill, alone = [], [], []
    for i in range(args.repeat):
        reload_alone(i)
        t0 = time.thread_time_ns()
        post_load_alone()
        alone.append((time.thread_time_ns() - t0) / 1e3)
        reload(i)
        t0 = time.thread_time_ns()
        post_load()
        t1 = time.thread_time_ns()
        plan.refill()
        t2 = time.thread_time_ns()
        post.append((t1 - t0) / 1e3)
        refill.append((t2 - t1) / 1e3)
    ratios = [(p + r) / p for p, r in zip(post, refill)]
    over_alone = [(p + r) / a for p, r, a in zip(post, refill, alone)]
    out = {"workload": "deepseek cpu", "derived": len(plan.entries), "repeat": args.repeat,
           "clock": "thread CPU", "post_load_us": statistics.median(post),
           "refill_us": statistics.median(refill),
           "post_load_refill_over_post_load": round(statistics.median(ratios), 4),
           "ci95": [round(x, 4) for x in _boot(ratios)],
           "refill_ci95_us": [round(x, 1) for x in _boot(refill)],
           "post_load_alone_us": statistics.median(alone),
           "over_alone": round(statistics.median(over_alone), 4),
           "over_alone_ci95": [round(x, 4) for x in _boot(over_alone)],
           "load_after": [round(x, 2) for x in os.getloadavg()],
           "runs_us": {"post_load": post, "refill": refill, "alone": alone}}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "runs_us"}))  # noqa: T201


if __name__ == "__main__":
    main()
