"""Compile time against the number of derived tensors (1k, 10k, 100k), one JSON line per size.

The workload of ``derivgraph bench --workload scaling`` (:mod:`derivgraph.tools.bench_scaling`:
a stack of small layers with four derived tensors each), compiled twice per size in one process
(``cold``, then ``warm``), with the time to construct the model.

    python3 benchmarks/bench_compile_scaling.py --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import json

from derivgraph.tools.bench_scaling import SCALING_SIZES, scaling_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SCALING_SIZES))
    args = parser.parse_args()
    for size in args.sizes:
        row = scaling_bench((size,))["sizes"][0]
        print(json.dumps(row), flush=True)  # noqa: T201 - a benchmark script


if __name__ == "__main__":
    main()
