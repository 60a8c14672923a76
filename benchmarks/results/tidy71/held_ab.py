"""In-process A/B of the flat path's held storages over one compile of the scaling model: for
each flat run (each chunk), the held list made both ways, interleaved and alternating which goes
first (A, the base: every output's and operand's ``untyped_storage()`` read; B, this branch:
the outputs' from the book's note, cut per chunk like their addresses, the operands' read),
REPEATS pairs a run, plus B's lookup once a group (median of REPEATS); prints the
per-compile sum of each run's median and how many pairs B beat.
usage (tree root): PYTHONPATH=. python3 benchmarks/results/tidy71/held_ab.py [SIZE] [REPEATS]"""
import os
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.compiler import codegen
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 21
runs: list[tuple[list[float], list[float], int, int]] = []
flat_run, storages_of = codegen._emit_run, codegen._storages


def timed_run(em, key, members, values, facts, total, part=""):  # noqa: ANN001, ANN202
    outs, noted = members.outs, facts.out_storages
    base, mine = [], []
    for i in range(repeats):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            t = time.perf_counter()
            if which == 0:
                old = storages_of(outs + values)
                base.append(time.perf_counter() - t)
            else:
                new = (storages_of(outs) if noted is None else list(noted)) + storages_of(values)
                mine.append(time.perf_counter() - t)
        assert list(map(id, old)) == list(map(id, new))  # the very storages
    runs.append((base, mine, len(outs) + len(values), 0 if noted is None else len(noted)))
    return flat_run(em, key, members, values, facts, total, part)


def timed_facts(em, got, values, n):  # noqa: ANN001, ANN202
    """B's added cost: the group's lookup of the noted storages (once a group, in _run_facts)."""
    book, took = codegen.book_of(em.ctx), []
    for _ in range(repeats):
        t = time.perf_counter()
        codegen._noted(book, got.values, storages=True)
        took.append(time.perf_counter() - t)
    lookups.append(statistics.median(took))
    return run_facts(em, got, values, n)


lookups: list[float] = []
run_facts = codegen._run_facts
codegen._emit_run, codegen._run_facts = timed_run, timed_facts
spec, layers = scaling_spec(), max(1, size // 4)
planner.compile_plan(scaling_model(layers), [spec])  # warm-up
runs.clear()
lookups.clear()
planner.compile_plan(scaling_model(layers), [spec])
base = sum(statistics.median(r[0]) for r in runs)
mine = sum(statistics.median(r[1]) for r in runs) + sum(lookups)
wins = sum(m < b for r in runs for b, m in zip(r[0], r[1]))
print(f"size {size}: {len(runs)} flat runs, {sum(r[2] for r in runs)} tensors held, "
      f"{sum(r[3] for r in runs)} noted ({len(lookups)} group lookups in mine, "
      f"{sum(lookups) * 1e3:.2f} ms); held list per compile (sum of medians) base "
      f"{base * 1e3:.2f} ms, mine {mine * 1e3:.2f} ms ({(mine - base) * 1e3:+.2f} ms); mine "
      f"faster in {wins} of {repeats * len(runs)} pairs; load {os.getloadavg()[0]:.2f}")
