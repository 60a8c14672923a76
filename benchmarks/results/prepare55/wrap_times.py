"""Real (uninstrumented but for one timer per call) seconds of named functions over one stamped
100k scaling compile: each function is wrapped by a ``perf_counter`` pair wherever a module
holds it (its own module and every ``from ... import`` of it), so lines are not traced (the
line profiler's per-line cost inflates C-level sweeps' neighbours several fold). Nested
wrapped calls are counted in both.

    PYTHONPATH=TREE python3 benchmarks/results/prepare55/wrap_times.py [--size 100000] \
        module:Qual.name ...
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import sys
import time
from collections import defaultdict
from typing import Any

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

TOTALS: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])


def _wrap(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = TOTALS[name]
            entry[0] += time.perf_counter() - start
            entry[1] += 1
    return timed


def install(name: str) -> None:
    """Wrap ``module:Qual.name`` where it is defined and wherever a module imported it."""
    module_name, _, qualname = name.partition(":")
    module = importlib.import_module(module_name)
    *outer, last = qualname.split(".")
    owner: Any = module
    for part in outer:
        owner = getattr(owner, part)
    original = owner.__dict__[last] if isinstance(owner, type) else getattr(owner, last)
    timed = _wrap(name, original)
    setattr(owner, last, timed)
    if not outer:
        for other in list(sys.modules.values()):
            if getattr(other, last, None) is original and other is not module:
                setattr(other, last, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("functions", nargs="+")
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        compile_plan(scaling_model(250), [spec])  # warm-up
    for name in args.functions:
        install(name)
    runs = []
    for _ in range(args.repeat):
        TOTALS.clear()
        model = scaling_model(args.size // 4)
        gc.collect()
        with stamping(True):
            start = time.perf_counter()
            compile_plan(model, [spec])
            total = time.perf_counter() - start
        runs.append((total, {k: v[0] for k, v in TOTALS.items()}))
        del model
    best = min(runs, key=lambda r: r[0])
    print(f"total (fastest of {args.repeat}) {best[0]:.3f}")
    for name in args.functions:
        values = sorted(r[1].get(name, 0.0) for r in runs)
        print(f"{name:70s} min {values[0]:.4f} median {values[len(values) // 2]:.4f}")


if __name__ == "__main__":
    main()
