"""In-process A/B of a stamped table's column reads on the 100k scaling table: what the
compile reads of one fresh table (the record check, the order's spans, the rows' source sets,
and the 37 ``column(k)`` calls a compile makes, in its order) with the base tree's modules
(a column zipped per reader, each ``column(k)`` by a per-row listcomp) vs this tree's (the
rows zipped once, ``InstanceTable.columns``), interleaved. The record check runs without the
run's held columns in both arms (that is micro_consistent.py's A/B).
usage (worktree root): PYTHONPATH=. python benchmarks/results/graph68/micro_columns.py [BASE]"""
import gc
import importlib.util
import os
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.compiler import instances, layers, row_deps
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

base_root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/base68"


def _load(name: str, rel: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(base_root, rel))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


b_inst = _load("base_instances", "derivgraph/compiler/instances.py")
b_layers = _load("base_layers", "derivgraph/compiler/layers.py")
b_deps = _load("base_row_deps", "derivgraph/compiler/row_deps.py")

seq: list[int] = []  # the column(k) calls of one compile, on its stamped table
column = instances.InstanceTable.column


def spied(self, k):
    seq.append(k)
    return column(self, k)


instances.InstanceTable.column = spied
plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
instances.InstanceTable.column = column
graph = plan.graph
[table] = graph.stamps
nodes, derived = graph.nodes, graph.derived
keys = list(graph.nodes)
walk, lead = layers._template_walk(graph, table.template)
args = (table.template, table.base, table.prefixes, table.starts)


def arm(inst, spans, deps, new: bool):
    t = inst.InstanceTable(args[0], list(table.rows), args[1], args[2], args[3])
    recipe = inst.row_recipe(t, derived)
    a = time.perf_counter()
    ok = inst.consistent_rows(t, recipe, derived)
    found = spans(keys, t if new else t.rows, walk, lead)
    sets = deps(nodes, [t])
    cols = [t.column(k) for k in seq]
    took = time.perf_counter() - a
    return took, (ok, found, dict(sets), cols)


gc.disable()
old_t, new_t, wins = [], [], 0
for _ in range(21):
    to, ro = arm(b_inst, b_layers._run_spans, b_deps.row_source_deps, False)
    tn, rn = arm(instances, layers._run_spans, row_deps.row_source_deps, True)
    assert ro == rn
    old_t.append(to)
    new_t.append(tn)
    wins += tn < to
print(f"table reads ({len(seq)} column calls) 25k rows: base {statistics.median(old_t) * 1e3:.2f} "
      f"ms, new {statistics.median(new_t) * 1e3:.2f} ms, new faster {wins} of {len(old_t)}; "
      f"load {os.getloadavg()[0]:.2f}")
