"""In-process A/B of a run's first stamp of its table (25k rows x 8, the 100k scaling
table's columns) followed by the first read of its columns: rows added, then zipped back
(`add_rows` + `columns()`, the tree before `add_columns`) vs the columns handed and kept
(`add_columns` + `columns()`), interleaved.
usage (worktree root): PYTHONPATH=. python benchmarks/results/graph68/micro_add_columns.py"""
import gc
import os
import statistics
import time

from derivgraph import planner
from derivgraph.compiler.instances import InstanceTable
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
[table] = plan.graph.stamps
kept = [list(c) for c in zip(*table.rows)]
prefixes, starts = list(table.prefixes), list(table.starts)
gc.disable()
old_t, new_t, wins = [], [], 0
for _ in range(41):
    a_table = InstanceTable(table.template, [], table.base)
    b_table = InstanceTable(table.template, [], table.base)
    a = time.perf_counter()
    a_table.add_rows(list(zip(*kept)), prefixes, starts)
    old = a_table.columns()
    b = time.perf_counter()
    b_table.add_columns(kept, prefixes, starts)
    new = b_table.columns()
    c = time.perf_counter()
    assert old == new and a_table.rows == b_table.rows
    old_t.append(b - a)
    new_t.append(c - b)
    wins += (c - b) < (b - a)
print(f"first stamp + columns 25k x 8: zip back {statistics.median(old_t) * 1e3:.2f} ms, "
      f"kept {statistics.median(new_t) * 1e3:.2f} ms, kept faster {wins} of {len(old_t)}; "
      f"load {os.getloadavg()[0]:.2f}")
