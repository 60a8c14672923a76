"""``lower_steps`` alone, on one stamped compile's plan (size 100000: 25000 layers): the median
process time of ``--rounds`` calls, GC off, of the tree on ``PYTHONPATH``. One JSON line.

    PYTHONPATH=TREE python lower_ab.py --tag base --rounds 7
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

from derivgraph import compile_plan
from derivgraph.compiler.lower import lower_steps
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tag", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with stamping(True):
        plan = compile_plan(scaling_model(25000), [scaling_spec()])
        times = []
        for _ in range(args.rounds):
            gc.collect()
            gc.disable()
            start = time.process_time()
            steps = lower_steps(plan.tensors)
            times.append(time.process_time() - start)
            gc.enable()
            del steps
    print(json.dumps({"tag": args.tag, "median": statistics.median(times), "times": times}))


main()
