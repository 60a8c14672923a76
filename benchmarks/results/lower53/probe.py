"""Whether the lowering cuts the order at its spans in a stamped 100k compile, and how long
its cut takes against the set filter it replaces (process time, one compile's graph)."""
from __future__ import annotations

import time
from itertools import filterfalse

import derivgraph.compiler.lower as lower
import derivgraph.planner as planner
from derivgraph.compiler.layers import layer_nodes
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

seen: list[tuple[bool, float, float]] = []
real = lower.unspanned


def probe(graph, tables):  # type: ignore[no-untyped-def]
    t0 = time.process_time()
    rest = real(graph, tables)
    t1 = time.process_time()
    held = layer_nodes(tables)
    filtered = list(filterfalse(held.__contains__, graph.ordered()))
    t2 = time.process_time()
    assert rest is None or rest == filtered
    seen.append((rest is not None, t1 - t0, t2 - t1))
    return rest


lower.unspanned = probe
with stamping(True):
    planner.compile_plan(scaling_model(25000), [scaling_spec()])  # size 100000: 25000 layers
for cut, a, b in seen:
    print(f"cut={cut} unspanned={a:.4f}s filter={b:.4f}s")
