"""In-process A/B of the record check (consistent_rows) on the 100k scaling table: the base
tree's function (ids looked up) vs this tree's (the run's held columns), interleaved.
usage (worktree root): PYTHONPATH=. python benchmarks/results/graph68/micro_consistent.py [BASE]"""
import gc
import importlib.util
import os
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.compiler.instances import consistent_rows, row_recipe
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

base_root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/base68"
spec = importlib.util.spec_from_file_location(
    "base_instances", os.path.join(base_root, "derivgraph/compiler/instances.py"))
base = importlib.util.module_from_spec(spec)
sys.modules["base_instances"] = base
spec.loader.exec_module(base)
plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
graph = plan.graph
[table] = graph.stamps
recipe = row_recipe(table, graph.derived)
base_recipe = base.row_recipe(table, graph.derived)  # its own slot classes
gc.disable()
old_t, new_t, wins = [], [], 0
for _ in range(41):
    a = time.perf_counter()
    old = base.consistent_rows(table, base_recipe, graph.derived)
    b = time.perf_counter()
    new = consistent_rows(table, recipe, graph.derived, graph.run_nodes)
    c = time.perf_counter()
    assert old == new == [True] * len(table)
    old_t.append(b - a)
    new_t.append(c - b)
    wins += (c - b) < (b - a)
print(f"consistent_rows 25k rows: base {statistics.median(old_t) * 1e3:.2f} ms, "
      f"new {statistics.median(new_t) * 1e3:.2f} ms, new faster {wins} of {len(old_t)}; "
      f"load {os.getloadavg()[0]:.2f}")
