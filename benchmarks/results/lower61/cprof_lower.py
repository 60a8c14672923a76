"""cProfile of ``planner._lower`` alone in one stamped 100k scaling compile (after a small
warm-up compile, collector off): what the lower phase calls, by own time.

    PYTHONPATH=TREE python3 benchmarks/results/lower61/cprof_lower.py [--size 100000] [--top 45]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
from typing import Any

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--top", type=int, default=45)
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        planner.compile_plan(scaling_model(250), [spec])  # warm-up
    real, prof = planner._lower, cProfile.Profile()

    def profiled(*a: Any, **k: Any) -> Any:
        prof.enable()
        try:
            return real(*a, **k)
        finally:
            prof.disable()

    planner._lower = profiled
    model = scaling_model(args.size // 4)
    gc.collect()
    gc.disable()
    with stamping(True):
        planner.compile_plan(model, [spec])
    gc.enable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
