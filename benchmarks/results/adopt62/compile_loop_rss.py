"""A compile-and-drop loop at 100k, in this process (PYTHONPATH: the tree): after each compile
the plan and model are dropped and a little other work runs; prints the resident memory and
the collector's generation counts after each round. ``--no-promotion`` replaces
``planner.promote_survivors`` by a no-op (the base behaviour on the same tree).

    PYTHONPATH=. python3 benchmarks/results/adopt62/compile_loop_rss.py [--no-promotion]
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import derivgraph.planner as planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _rss_mib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-promotion", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tag = "no promotion" if args.no_promotion else "promotion"
    if args.no_promotion:
        planner.promote_survivors = lambda: None  # type: ignore[assignment]
    spec = scaling_spec()
    start = time.process_time()
    for i in range(args.rounds):
        model = scaling_model(25000)
        with stamping(True):
            plan = planner.compile_plan(model, [spec])
        del plan, model
        junk = [[j] for j in range(50000)]
        del junk
        print(f"{tag} round {i}: rss {_rss_mib()} MiB, gc counts {gc.get_count()}, "
              f"oldest generation {len(gc.get_objects(2))} objects")
    print(f"{tag}: cpu {time.process_time() - start:.2f} s")


if __name__ == "__main__":
    main()
