"""Process time of named functions over stamped scaling compiles (after a warm-up compile):
each function wrapped by a timer (nested parts also counted in their parent), every module
that imported it by name patched too; the median over ``--compiles`` compiles.

    PYTHONPATH=TREE python3 benchmarks/results/startup64/parts.py [--size 100000] \
        [--compiles 3] module:Qual.name ...
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

TOTALS: dict[str, float] = defaultdict(float)


def wrap(name: str) -> None:
    """Replace ``module:Qual.name`` by a timed wrapper wherever the object is bound."""
    module_name, _, qualname = name.partition(":")
    owner: Any = importlib.import_module(module_name)
    *outer, last = qualname.split(".")
    for part in outer:
        owner = getattr(owner, part)
    original = owner.__dict__[last] if isinstance(owner, type) else getattr(owner, last)

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            TOTALS[qualname] += time.process_time() - start

    setattr(owner, last, timed)
    if not outer:  # a module-level function: every module holding it by name
        for module in list(sys.modules.values()):
            if module is not None and getattr(module, last, None) is original:
                setattr(module, last, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--compiles", type=int, default=3)
    parser.add_argument("--no-gc", action="store_true", help="the collector off while compiling")
    parser.add_argument("functions", nargs="+")
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        compile_plan(scaling_model(250), [spec])  # warm-up
    for name in args.functions:
        wrap(name)
    runs: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.compiles):
        model = scaling_model(args.size // 4)
        gc.collect()
        if args.no_gc:
            gc.disable()
        TOTALS.clear()
        start = time.process_time()
        with stamping(True):
            plan = compile_plan(model, [spec])
        runs["(compile)"].append(time.process_time() - start)
        gc.enable()
        for name in args.functions:
            qual = name.partition(":")[2]
            runs[qual].append(TOTALS.get(qual, 0.0))
        del plan, model
    for qual, values in runs.items():
        print(f"{qual:48s} {statistics.median(values):.4f}  "
              + " ".join(f"{v:.4f}" for v in values))


if __name__ == "__main__":
    main()
