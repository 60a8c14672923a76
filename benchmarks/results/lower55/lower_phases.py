"""The lowering's phases of one tree (the one on PYTHONPATH) at 100k, stamped scaling workload:
process time of ``_lower`` and its parts per compile, after a small warm-up compile; prints one
JSON line of per-phase medians over ``--repeat`` compiles (run it alternately per tree).

    PYTHONPATH=TREE python3 benchmarks/results/lower55/lower_phases.py --size 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys

import derivgraph.planner as planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.plan import Plan
from derivgraph.runtime.storage import BoundTensors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_compile_phases import _instrument  # noqa: E402

PHASES = [(planner, "_lower", "lower (all)"), (Plan, "bind_tensors", "bind_tensors"),
          (Holders, "bind", "holders.bind"), (BoundTensors, "bind", "tensors.bind"),
          (planner, "lower_steps", "lower_steps"), (Plan, "install", "install"),
          (planner, "_mismatches", "bit check"), (planner, "compile_plan", "total")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        planner.compile_plan(scaling_model(250), [spec])
    times: dict[str, float] = {}
    _instrument(times, PHASES)
    runs: list[dict[str, float]] = []
    for _ in range(args.repeat):
        model = scaling_model(args.size // 4)
        gc.collect()
        times.clear()
        with stamping(True):
            plan = planner.compile_plan(model, [spec])
        runs.append(dict(times))
        del plan, model
    out = {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}
    out["tag"] = args.tag
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
