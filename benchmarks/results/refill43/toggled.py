"""This branch's refill against the base tree's refill paths in one process, interleaved.

On a shared, loaded 2-core machine, process pairs of two trees differ by more than the change
(the engine's own post-load, the same code in both, moves by 0.6-1.5x between runs). Here one
process runs the public ``plan.refill()`` after each reload and post-load, in the order ABBA,
where ``base`` puts back, by monkeypatching, what the base tree (``c6ddaea``) ran: the holder
table's read and the pick (``table.take(current)``, the values kept for the rebind), every watch
settled after the rebind, and the flat copy's rows of one-byte elements; ``mine`` is this tree
as it is. Host time of the call (no device wait; ``--clock cpu``: the thread's CPU clock,
``wall``: ``time.perf_counter``); medians, per-pair deltas and their median. On CUDA the device
is waited for after the post-load and after the refill, outside the timing (there the flat
copy is not used: only the first three changes are toggled).

    PYTHONPATH=. python3 benchmarks/results/refill43/toggled.py --repeat 201 --json OUT.json
    PYTHONPATH=. python3 benchmarks/results/refill43/toggled.py --device cuda --clock wall --repeat 201
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench import _workload


def _take_batched_base(self: Plan, report: Any) -> Any:
    """``Plan._take_batched`` as in the base tree."""
    holders = self.holders
    if not holders.owners_current_for(report):
        return None
    table = self._refill_table_now()
    current = holders.table.current()
    taken = table.take(current)
    if taken is None:
        return None
    taken.copy()
    holders.note_read(report, current, every=table.whole and taken.mask is None)
    report.bytes += taken.nbytes
    report.taken_from_engine = report.written = report.steps = len(taken.ours)
    return taken.constants, self._rest_for(taken.mask, table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=201)
    parser.add_argument("--json", default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--clock", default="cpu", choices=["cpu", "wall"])
    args = parser.parse_args()
    clock = time.thread_time_ns if args.clock == "cpu" else time.perf_counter_ns
    cuda = args.device == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    model, specs, reload, post_load, _ = _workload(args.device, "deepseek", 61, None)
    plan = compile_plan(model, specs)
    reload(0)
    post_load()
    plan.refill()
    runs = plan._refill_table.flat
    views = {  # per flat run: (rows, src) of this tree, and of the base tree
        "mine": [(run.rows, run.src) for _a, _b, run in runs],
        "base": [(np.lib.stride_tricks.as_strided(
            run.rows.base, shape=(run.rows.shape[0], run.src.itemsize), strides=(1, 1),
            writeable=True), run.src.view(np.uint8).reshape(len(run.src), run.src.itemsize))
            for _a, _b, run in runs]}
    take_mine, reach_mine = Plan._take_batched, Holders._stores_reach

    def use(arm: str) -> None:
        Plan._take_batched = take_mine if arm == "mine" else _take_batched_base
        Holders._stores_reach = reach_mine if arm == "mine" else \
            (lambda self, name, watch: True)
        for (_a, _b, run), (rows, src) in zip(runs, views[arm]):
            run.rows, run.src = rows, src

    times: dict[str, list[float]] = {"base": [], "mine": []}
    for arm in ("base", "mine", "base", "mine"):  # warm both paths
        use(arm)
        reload(1)
        post_load()
        plan.refill()
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(args.repeat):
            for arm in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
                use(arm)
                reload(i)
                post_load()
                sync()
                t0 = clock()
                plan.refill()
                times[arm].append((clock() - t0) / 1e3)
                sync()
    gc.unfreeze()
    use("mine")
    deltas = [m - b for b, m in zip(times["base"], times["mine"])]
    result = {
        "device": args.device, "repeat": args.repeat, "clock": args.clock, "unit": "us",
        "refill_median": {k: round(statistics.median(v), 1) for k, v in times.items()},
        "refill_min": {k: round(min(v), 1) for k, v in times.items()},
        "delta_mine_minus_base_median": round(statistics.median(deltas), 1),
        "ratio_of_medians": round(statistics.median(times["mine"])
                                  / statistics.median(times["base"]), 3),
    }
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(text)  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
