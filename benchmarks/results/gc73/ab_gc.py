"""In-process A/B of gc73's cut: base ``row_source_deps`` (/tmp/base73's row_deps, every
position set made per row) vs this tree's (a set no derived tensor has made on first need).
Per pair, alternating which goes first: compile time (process time), the young objects the
compile leaves, and the first young collection's time. Run from the tree with PYTHONPATH=.:
``python benchmarks/results/gc73/ab_gc.py [PAIRS] [LAYERS] [BASE_TREE]``."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import sys
import time

from derivgraph.compiler import graph as graph_mod
from derivgraph.compiler import row_deps
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 25000
base_tree = sys.argv[3] if len(sys.argv) > 3 else "/tmp/base73"
spec_ = importlib.util.spec_from_file_location(
    "row_deps_base", os.path.join(base_tree, "derivgraph/compiler/row_deps.py"))
assert spec_ is not None and spec_.loader is not None
base = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(base)
impl = {"A": base.row_source_deps, "B": row_deps.row_source_deps}
spec = scaling_spec()
gc.disable()


def one(which: str) -> dict[str, float]:
    graph_mod.row_source_deps = impl[which]
    model = scaling_model(layers)
    gc.collect()
    t = time.process_time()
    plan = compile_plan(model, [spec])
    c = time.process_time() - t
    young = len(gc.get_objects(0))
    t = time.process_time()
    gc.collect(0)
    g = time.process_time() - t
    del plan, model
    gc.collect()
    return {"compile": c, "young": young, "gc": g, "both": c + g}


one("A"), one("B")  # warm
rows: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
for i in range(pairs):
    for which in ("AB" if i % 2 == 0 else "BA"):
        rows[which].append(one(which))
out = {"load": os.getloadavg(), "pairs": pairs, "layers": layers}
for key in ("compile", "young", "gc", "both"):
    a = [r[key] for r in rows["A"]]
    b = [r[key] for r in rows["B"]]
    out[key] = {"A_median": statistics.median(a), "B_median": statistics.median(b),
                "B_below_A": sum(y < x for x, y in zip(a, b)), "of": pairs}
out["raw"] = rows
print(json.dumps(out))
