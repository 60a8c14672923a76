"""In-process interleaved A/B of the record check at 100k: ``consistent_rows`` with no kept
column (the rule makes every id, as before build82) vs with the build's kept columns."""

import cProfile
import pstats
import time

import derivgraph.compiler.layers as layers_mod
from derivgraph.compiler import instances
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

cap = []
orig = layers_mod.consistent_rows


def spy(*args):
    cap.append(args)
    return orig(*args)


layers_mod.consistent_rows = spy
instances.RowIds.release = lambda self: None  # keep the build's columns to time the check
plan = compile_plan(scaling_model(25000), [scaling_spec()])
table, recipe, derived, run_nodes, row_ids = cap[-1]
for _ in range(7):
    t0 = time.perf_counter()
    plain = instances.consistent_rows(table, recipe, derived, run_nodes)
    t1 = time.perf_counter()
    kept = instances.consistent_rows(table, recipe, derived, run_nodes, row_ids)
    t2 = time.perf_counter()
    assert plain == kept and all(kept)
    print(f"plain {1e3 * (t1 - t0):.1f} row_ids {1e3 * (t2 - t1):.1f}")
profile = cProfile.Profile()
profile.enable()
for _ in range(10):
    instances.consistent_rows(table, recipe, derived, run_nodes, row_ids)
profile.disable()
pstats.Stats(profile).sort_stats("tottime").print_stats(8)
