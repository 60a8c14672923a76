"""cProfile of one stamped 100k compile (after a warm-up), the functions of the lowering half.

    PYTHONPATH=TREE python3 profile_after_evaluate.py [--size 100000] [--top 60] [--sort tottime]
"""

import argparse
import cProfile
import gc
import pstats

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--top", type=int, default=60)
parser.add_argument("--sort", default="tottime")
parser.add_argument("--out", default="/tmp/prof38b.stats")
args = parser.parse_args()
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
model = scaling_model(args.size // 4)
gc.collect()
prof = cProfile.Profile()
with stamping(True):
    prof.enable()
    plan = compile_plan(model, [spec])
    prof.disable()
prof.dump_stats(args.out)
stats = pstats.Stats(args.out)
stats.sort_stats(args.sort).print_stats(args.top)
