"""cProfile of ``build_graph`` alone on the stamped scaling workload (after a warm-up).

    PYTHONPATH=TREE python3 profile_build.py [--size 100000] [--top 40]
"""

import argparse
import cProfile
import gc
import pstats

from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--top", type=int, default=40)
args = parser.parse_args()
spec = scaling_spec()
build_graph(scaling_model(250), match_specs(scaling_model(250), [spec]))
model = scaling_model(args.size // 4)
bound = match_specs(model, [spec])
check_bindings(bound)
gc.collect()
gc.disable()
prof = cProfile.Profile()
prof.enable()
graph = build_graph(model, bound)
prof.disable()
stats = pstats.Stats(prof)
stats.sort_stats("tottime").print_stats(args.top)
