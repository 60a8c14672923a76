"""cProfile of the compile's front half (match, bind checks, build_graph, evaluate) on the
stamped scaling workload, one warm run; top functions by own time.

    PYTHONPATH=TREE python3 profile_front.py [--size 100000] [--top 45]
"""

import argparse
import cProfile
import gc
import pstats
import time

from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.planner import _evaluate_all, compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--top", type=int, default=45)
parser.add_argument("--sort", default="tottime")
args = parser.parse_args()
spec = scaling_spec()
compile_plan(scaling_model(args.size // 4), [spec])  # warm-up
model = scaling_model(args.size // 4)
gc.collect()
gc.disable()


def front() -> None:
    times = {}
    t = time.process_time()
    bound = match_specs(model, [spec])
    times["match"] = time.process_time() - t
    t = time.process_time()
    check_bindings(bound)
    times["check_bindings"] = time.process_time() - t
    t = time.process_time()
    graph = build_graph(model, bound)
    times["build_graph"] = time.process_time() - t
    t = time.process_time()
    sources, graph.read_sources = graph.read_sources, {}
    _evaluate_all(graph, sources)
    times["evaluate"] = time.process_time() - t
    print({k: round(v, 3) for k, v in times.items()})  # noqa: T201


front()  # unprofiled
prof = cProfile.Profile()
prof.runcall(front)
pstats.Stats(prof).sort_stats(args.sort).print_stats(args.top)
