"""In-process interleaved A/B of the record check at 100k: consistent_rows with no kept column (the rule makes every id, as before build82) vs with the build's kept columns (build82)."""
import gc, time, sys
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
import derivgraph.compiler.layers as L
from derivgraph.compiler import instances as I
cap = []
orig = L.consistent_rows
def spy(*a, **k):
    cap.append(a); return orig(*a, **k)
L.consistent_rows = spy
I.RowIds.release = lambda self: None  # keep the build's columns to time the check with them
spec = scaling_spec()
plan = compile_plan(scaling_model(25000), [spec])
a = cap[-1]
table, recipe, derived, run_nodes = a[:4]
row_ids = a[4] if len(a) > 4 else None
print(row_ids and {k: len(v) for k, v in row_ids._paths.items()}, row_ids and {k: [r for r,_ in v] for k, v in row_ids._ops.items()})
print(table.starts[:3])
for r in range(7):
    t=time.perf_counter(); x=I.consistent_rows(table, recipe, derived, run_nodes); t1=time.perf_counter()
    y=I.consistent_rows(table, recipe, derived, run_nodes, row_ids); t2=time.perf_counter()
    assert x==y and all(x)
    print(f"plain {1e3*(t1-t):.1f} row_ids {1e3*(t2-t1):.1f}")
import cProfile, pstats
pr=cProfile.Profile(); pr.enable()
for _ in range(10): I.consistent_rows(table, recipe, derived, run_nodes, row_ids)
pr.disable(); pstats.Stats(pr).sort_stats('tottime').print_stats(12)
