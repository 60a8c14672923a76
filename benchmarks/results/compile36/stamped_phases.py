"""Stamped-only phase profile of one tree: ``bench_compile_phases``' instrumented compile at
``--size``, stamping on, ``--repeat`` times after one warm-up; one JSON line (per-run phases).
``--plain``: stamping off instead (entries49's ``plain_phases.py``, folded in).

Run from a tree's ``benchmarks/`` directory with that tree first on ``PYTHONPATH``, e.g.
``cd TREE/benchmarks && PYTHONPATH=TREE python3 THIS --size 100000 --repeat 1 --tag base``.
"""

import argparse
import json
import sys
import time

sys.path.insert(0, ".")
import bench_compile_phases as b  # noqa: E402

from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--repeat", type=int, default=1)
parser.add_argument("--tag", default="")
parser.add_argument("--plain", action="store_true")
args = parser.parse_args()
times: dict[str, float] = {}
b._instrument(times)
spec, layers = scaling_spec(), max(1, args.size // 4)
b.planner.compile_plan(scaling_model(layers), [spec])  # warm-up
for _ in range(args.repeat):
    model = scaling_model(layers)
    wall = time.perf_counter()
    plan, total = b.timed_compile(model, spec, times, stamped=not args.plain)
    wall = time.perf_counter() - wall
    print(json.dumps({"tag": args.tag, "total_cpu": round(total, 4), "wall": round(wall, 4),
                      "load1": round(__import__("os").getloadavg()[0], 2),
                      **{k: round(v, 4) for k, v in times.items()}}))
    del plan, model
