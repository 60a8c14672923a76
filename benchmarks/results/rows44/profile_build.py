"""cProfile of build_graph on the stamped scaling 100k (one warm-up build first).

    PYTHONPATH=<tree> python benchmarks/results/rows44/profile_build.py [--stamp-only] > out.txt
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import sys

from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    spec = scaling_spec()
    model = scaling_model(25000)
    bound = match_specs(model, [spec])
    check_bindings(bound)
    build_graph(model, bound)  # warm-up
    model = scaling_model(25000)
    bound = match_specs(model, [spec])
    check_bindings(bound)
    gc.collect()
    gc.disable()
    prof = cProfile.Profile()
    prof.enable()
    build_graph(model, bound)
    prof.disable()
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(35)
    stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
