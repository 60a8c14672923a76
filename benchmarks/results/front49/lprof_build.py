"""Line profile of build_graph's parts on one stamped compile (after a warm-up).

    PYTHONPATH=TREE python3 lprof_build.py [--size 100000] [--funcs a,b]
"""

import argparse
import gc
import importlib

try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--funcs", default="derivgraph.compiler.build:build_graph,"
                    "derivgraph.compiler.stamp:Stamper.resolve_bound,"
                    "derivgraph.compiler.stamp:Stamper._replay,"
                    "derivgraph.compiler.stamp:facts_hold")
args = parser.parse_args()
prof = LineProfiler()
for item in args.funcs.split(","):
    mod, name = item.split(":")
    obj = importlib.import_module(mod)
    for part in name.split("."):
        obj = getattr(obj, part)
    prof.add_function(obj)
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
model = scaling_model(args.size // 4)
gc.collect()
gc.disable()
with stamping(True):
    prof.enable()
    plan = compile_plan(model, [spec])
    prof.disable()
prof.print_stats(output_unit=1e-3)
