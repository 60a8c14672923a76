"""In-process phase times of stamped 100k compiles of the tree on PYTHONPATH (one JSON line per
compile): ``bench_compile_phases``' instrumentation (its PHASES), stamping on only.

    PYTHONPATH=TREE python3 phases_ab.py [--size 100000] [--runs 2] [--label base] [--also PHASE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from bench_compile_phases import _instrument, timed_compile  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

KEEP = ("total", "  lower: bind_tensors", "  bind: holders.bind", "  lower: lower_steps",
        "  lower: install (codegen)", "  lower: bit check (_mismatches)", "lower (all)",
        "prepare (all)", "  prepare: RefillTable")

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--runs", type=int, default=2)
parser.add_argument("--label", default="")
parser.add_argument("--also", action="append", default=[],
                    help="another phase to print (its name in bench_compile_phases' PHASES)")
args = parser.parse_args()
KEEP = KEEP + tuple(args.also)
times: dict[str, float] = {}
_instrument(times)
spec, layers = scaling_spec(), max(1, args.size // 4)
planner.compile_plan(scaling_model(layers // 100 or 1), [spec])  # warm-up
for _ in range(args.runs):
    model = scaling_model(layers)
    plan, total = timed_compile(model, spec, times, stamped=True)
    row = {"total": total, **times}
    print(json.dumps({"label": args.label, **{k.strip(): round(row.get(k, 0.0), 4)  # noqa: T201
                                              for k in KEEP}}), flush=True)
    del plan, model
