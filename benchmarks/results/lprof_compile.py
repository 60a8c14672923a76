"""line_profiler of named functions over one stamped scaling compile (after a small warm-up
compile), for the helpers' NOTES: each function named ``module:Qual.name``.

    PYTHONPATH=TREE python3 benchmarks/results/lprof_compile.py [--size 100000] [--unit 0.001] \
        derivgraph.runtime.holders:Holders.bind derivgraph.planner:_compile ...
"""

from __future__ import annotations

import argparse
import gc
import importlib
import operator

try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def function(name: str) -> object:
    """``module:Qual.name`` resolved to the object."""
    module, _, qualname = name.partition(":")
    return operator.attrgetter(qualname)(importlib.import_module(module))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--unit", type=float, default=None, help="output unit in seconds")
    parser.add_argument("functions", nargs="+")
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        compile_plan(scaling_model(250), [spec])  # warm-up
    model = scaling_model(args.size // 4)
    prof = LineProfiler()
    for name in args.functions:
        prof.add_function(function(name))
    gc.collect()
    with stamping(True):
        prof.enable()
        compile_plan(model, [spec])
        prof.disable()
    prof.print_stats(output_unit=args.unit, stripzeros=True)


if __name__ == "__main__":
    main()
