"""In-process A/B of adopt71 (adoption reads the held derived columns as columns) on the
100k scaling compile.

A: adoption reads ``graph.derived`` first, as the base's ``adopt_or_allocate`` did (every
held row made and put in the dict there; the column reads then take the per-row path); B:
this tree. Interleaved A, B, B, A ... on fresh models; per round the warm ``compile_plan``
and ``adopt_or_allocate`` inside it.
usage: PYTHONPATH=. python3 benchmarks/results/adopt71/ab_inprocess.py [LAYERS] [ROUNDS]
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

REAL = planner.adopt_or_allocate


def compile_once(side: str, layers: int) -> tuple[float, float]:
    spent: list[float] = []

    def timed(plan: Any, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        if side == "A":
            assert plan.graph.derived is not None  # the base's first read: the dict made
        out = REAL(plan, *args, **kwargs)
        spent.append(time.perf_counter() - t)
        return out

    model, spec = scaling_model(layers), scaling_spec()
    planner.adopt_or_allocate = timed
    gc.collect()
    try:
        t = time.perf_counter()
        planner.compile_plan(model, [spec])
        total = time.perf_counter() - t
    finally:
        planner.adopt_or_allocate = REAL
    return total, spent[0]


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    compile_once("A", 500)
    compile_once("B", 500)  # warm-up
    got: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    load0 = os.getloadavg()
    for r in range(rounds):
        for side in ("AB" if r % 2 == 0 else "BA"):
            got[side].append(compile_once(side, layers))
    load1 = os.getloadavg()
    wins = sum(b[0] < a[0] for a, b in zip(got["A"], got["B"]))
    wins_adopt = sum(b[1] < a[1] for a, b in zip(got["A"], got["B"]))
    for side in "AB":
        print(f"{side}: compile median {1000 * statistics.median(t for t, _ in got[side]):.1f} "
              f"ms (min {1000 * min(t for t, _ in got[side]):.1f}), adopt_or_allocate median "
              f"{1000 * statistics.median(b for _, b in got[side]):.1f} ms "
              f"(min {1000 * min(b for _, b in got[side]):.1f})")
    print(f"B faster: compile {wins} of {rounds}, adopt_or_allocate {wins_adopt} of {rounds}; "
          f"load {load0[0]:.2f} -> {load1[0]:.2f}")
    print("A:", [(round(t, 4), round(a, 4)) for t, a in got["A"]])
    print("B:", [(round(t, 4), round(a, 4)) for t, a in got["B"]])


if __name__ == "__main__":
    main()
