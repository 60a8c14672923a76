"""Garbage collections inside ``compile_plan`` at 100k (gc.callbacks): how many, of which
generation, how long, whether any fell inside ``compile_plan``'s return or ``Plan.prepare``
(the Left item of NOTES).

usage (tree root): PYTHONPATH=. python3 benchmarks/results/prep72/gc_after_compile.py [RUNS]
"""

from __future__ import annotations

import gc
import sys
import time
from collections import defaultdict

from derivgraph import planner
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
spec = scaling_spec()
planner.compile_plan(scaling_model(25000), [spec])  # warm-up
state = {"phase": "compile", "t0": 0.0, "prepare": 0.0}
log: list[tuple[str, int, float]] = []


def callback(phase: str, info: dict) -> None:
    if phase == "start":
        state["t0"] = time.perf_counter()
    else:
        log.append((state["phase"], info["generation"], time.perf_counter() - state["t0"]))


real = Plan.prepare


def prepare(self) -> None:
    state["phase"] = "prepare"
    start = time.perf_counter()
    try:
        real(self)
    finally:
        state["prepare"] = time.perf_counter() - start
        state["phase"] = "compile"


Plan.prepare = prepare
gc.callbacks.append(callback)
for _ in range(runs):
    model = scaling_model(25000)
    log.clear()
    start = time.perf_counter()
    plan = planner.compile_plan(model, [spec])
    total = time.perf_counter() - start
    inside = len(log)  # no container made since the return: a collection so far was inside
    by: dict[int, list[float]] = defaultdict(list)
    for _phase, generation, spent in log:
        by[generation].append(round(spent * 1e3, 1))
    print(f"compile_plan {total * 1e3:.0f} ms, prepare {state['prepare'] * 1e3:.0f} ms; "  # noqa: T201
          f"collections by generation (ms): {dict(by)}, {inside} of them inside compile_plan;"
          f" in prepare: {[p for p, _g, _s in log if p == 'prepare']}")
    del plan, model
