"""In-process A/B of ``row_source_deps`` alone on one compiled 100k graph: base (/tmp/base73's
row_deps) vs this tree's, interleaved, many repeats (process time; the collector off, each
answer dropped and collected between calls). Run from the tree with PYTHONPATH=.:
``python benchmarks/results/gc73/ab_rowdeps.py [REPEATS] [LAYERS] [BASE_TREE]``."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import sys
import time

from derivgraph.compiler import row_deps
from derivgraph.compiler.layers import closed_layers
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 30
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 25000
base_tree = sys.argv[3] if len(sys.argv) > 3 else "/tmp/base73"
spec_ = importlib.util.spec_from_file_location(
    "row_deps_base", os.path.join(base_tree, "derivgraph/compiler/row_deps.py"))
assert spec_ is not None and spec_.loader is not None
base = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(base)
impl = {"A": base.row_source_deps, "B": row_deps.row_source_deps}
graph = compile_plan(scaling_model(layers), [scaling_spec()]).graph
nodes, tables = graph.nodes, closed_layers(graph)
gc.collect()
gc.disable()
times: dict[str, list[float]] = {"A": [], "B": []}
for i in range(repeats):
    for which in ("AB" if i % 2 == 0 else "BA"):
        t = time.process_time()
        deps = impl[which](nodes, tables)
        times[which].append(time.process_time() - t)
        del deps
        gc.collect()
a, b = times["A"], times["B"]
print(json.dumps({"load": os.getloadavg(), "repeats": repeats, "layers": layers,
                  "A_median_ms": 1e3 * statistics.median(a),
                  "B_median_ms": 1e3 * statistics.median(b),
                  "B_below_A": sum(y < x for x, y in zip(a, b)), "of": repeats}))
