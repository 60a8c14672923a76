"""What ``Plan.prepare`` costs inside the 100k scaling compile, without a profiler: the warm
``compile_plan`` as it is (A) against the same compile with ``Plan.prepare`` replaced by a
no-op in this process (B: what the first run and refill would then build lazily), alternating
A, B, B, A ... for ``--pairs`` pairs; each B plan's first ``refill`` (which then builds what
prepare would have) and second ``refill`` are timed too. Medians; no library file changes.

    PATH=/work/venv/bin:$PATH PYTHONPATH=. python3 benchmarks/results/floor69/prepare_ab.py
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from typing import Any

from derivgraph.planner import compile_plan
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_PREPARE = Plan.prepare


def _compile(layers: int, spec: Any, prepare: bool) -> tuple[float, Any]:
    model = scaling_model(layers)
    Plan.prepare = _PREPARE if prepare else (lambda self: None)  # type: ignore[method-assign]
    try:
        gc.collect()
        start = time.perf_counter()
        plan = compile_plan(model, [spec])
        return time.perf_counter() - start, plan
    finally:
        Plan.prepare = _PREPARE  # type: ignore[method-assign]


def _timed_refill(plan: Any) -> float:
    gc.collect()
    start = time.perf_counter()
    plan.refill()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    layers, spec = max(1, args.size // 4), scaling_spec()
    load = os.getloadavg()[0]
    _compile(layers, spec, True)  # cold
    a, b, first, second, a_first = [], [], [], [], []
    for i in range(args.pairs):
        for prepare in ((True, False) if i % 2 == 0 else (False, True)):
            seconds, plan = _compile(layers, spec, prepare)
            (a if prepare else b).append(seconds)
            if prepare:
                a_first.append(_timed_refill(plan))
            else:
                first.append(_timed_refill(plan))
                second.append(_timed_refill(plan))
            del plan
    wins = sum(y < x for x, y in zip(a, b))

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e3:.1f} ms (min {min(values) * 1e3:.1f})"

    print(f"size {args.size}, {args.pairs} pairs, load {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"A compile (prepare at compile):       {ms(a)}; its first refill {ms(a_first)}")
    print(f"B compile (prepare left to first use): {ms(b)}; B beat A in {wins} of {args.pairs}")
    print(f"B first refill (builds it): {ms(first)}; B second refill: {ms(second)}")


if __name__ == "__main__":
    main()
