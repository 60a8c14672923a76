"""In-process interleaved A/B of ``Plan.prepare`` at 100k (prep72): A undoes this branch's cuts
by monkeypatching (each back to d4e0747f's rule: the per-target position sweep, the entries'
mask made again, each flat copy reading its storages, a range per watch run), B is the branch
(the RefillTable's skipped ``None in index`` is in both). One fresh stamped model
per compile; pairs alternate A, B, A, B ...; prints medians, "B beat A in N of M" and the load.

usage (tree root): PYTHONPATH=. python3 benchmarks/results/prep72/ab_prepare.py [PAIRS] [SIZE]
"""

from __future__ import annotations

import operator
import os
import statistics
import sys
import time
from itertools import compress, count, islice, repeat

from derivgraph import planner
from derivgraph.runtime import engine, storage, watch
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
size = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
spec, layers = scaling_spec(), max(1, size // 4)

new = {"strided": engine._strided_equal, "holders": engine._startup_holders,
       "words": storage.BoundTensors.take_startup_words, "runs": watch._by_runs}


def base_runs(dicts, outside):  # d4e0747f's _by_runs
    items = list(dicts)
    if not items:
        return None
    starts = [0, *compress(count(1), map(operator.is_not, islice(items, 1, None), items))]
    unique = list(map(items.__getitem__, starts))
    if len(set(map(id, unique))) != len(unique):
        return None
    members = list(map(range, starts, [*starts[1:], len(items)]))
    always = []
    for p in compress(count(), map(operator.is_, unique, repeat(outside))):
        always = list(members.pop(p))
        del unique[p]
        break
    return unique, members, always


def base_words(self, proven, entries):  # d4e0747f's take_startup_words
    return self.startup_addresses().take_words(proven, storage._restorable(entries))


old = {"strided": lambda *args: False,  # the per-target sweep decides (d4e0747f)
       "holders": lambda table, index: None,  # each flat copy reads its storages
       "words": base_words, "runs": base_runs}


def use(variant: dict) -> None:
    engine._strided_equal = variant["strided"]
    engine._startup_holders = variant["holders"]
    storage.BoundTensors.take_startup_words = variant["words"]
    watch._by_runs = variant["runs"]


spent: list[tuple[float, float]] = []  # (wall, thread CPU) of each prepare
real = Plan.prepare


def timed(self):
    start, cpu = time.perf_counter(), time.thread_time()
    try:
        return real(self)
    finally:
        spent.append((time.perf_counter() - start, time.thread_time() - cpu))


Plan.prepare = timed
planner.compile_plan(scaling_model(layers), [spec])  # warm-up
times: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
for _ in range(pairs):
    for name, variant in (("A", old), ("B", new)):
        use(variant)
        model = scaling_model(layers)
        spent.clear()
        planner.compile_plan(model, [spec])
        times[name].append(spent[-1])
        del model
for k, clock in enumerate(("wall", "thread CPU")):
    a_times = [t[k] for t in times["A"]]
    b_times = [t[k] for t in times["B"]]
    wins = sum(b < a for a, b in zip(a_times, b_times))
    a, b = statistics.median(a_times), statistics.median(b_times)
    print(f"size {size} pairs {pairs} prepare ({clock}) median A {a * 1e3:.1f} ms  "
          f"B {b * 1e3:.1f} ms  cut {(a - b) * 1e3:.1f} ms ({(a - b) / a:.1%}); "
          f"B beat A in {wins} of {pairs}; load {os.getloadavg()[0]:.2f}")
    print("A", [round(t * 1e3, 1) for t in a_times])
    print("B", [round(t * 1e3, 1) for t in b_times])
