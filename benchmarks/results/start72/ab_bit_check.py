"""In-process interleaved A/B of the compile's column bit check (``planner._columns_equal``)
on the 100k scaling compile: A = the values' places read (``planner._joined``, the book's
noted wholes hidden), B = the book's noted wholes (``ColumnLayouts.whole``). Run from a tree
root: ``PYTHONPATH=. python3 benchmarks/results/start72/ab_bit_check.py [PAIRS]``."""

import os
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 31
real = planner._mismatches
times: dict[str, list[float]] = {"A": [], "B": []}


def timed(plan, values, written=None):
    book, columns = plan.tensors.layouts, plan.entries.columns
    targets = plan.programs.written()
    noted = book._wholes
    answers = {}
    for _ in range(PAIRS):
        for name in ("A", "B"):
            book._wholes = {} if name == "A" else noted
            start = time.perf_counter()
            answers[name] = planner._columns_equal(columns, values, targets, book, written)
            times[name].append(time.perf_counter() - start)
    book._wholes = noted
    assert answers["A"] == answers["B"] and answers["A"]
    return real(plan, values, written)


planner._mismatches = timed
planner.compile_plan(scaling_model(25000), [scaling_spec()])
a, b = times["A"], times["B"]
wins = sum(y < x for x, y in zip(a, b))
print(f"_columns_equal 100k: A (places read) median {statistics.median(a) * 1e3:.2f} ms, "
      f"B (noted wholes) median {statistics.median(b) * 1e3:.2f} ms, B faster in {wins} of "
      f"{len(a)} pairs, load {os.getloadavg()[0]:.2f}")
