"""Deepseek-like compile at many layers (held nodes made or not by the lowering's expanded
steps): process seconds of ``compile_plan`` and of the plan's lowering of layer steps, and
how many held nodes the compile made. One process, one tree (the first on PYTHONPATH):

    PYTHONPATH=TREE python3 deepseek_ab.py LAYERS [REPEATS]   # prints one JSON line
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from derivgraph.compiler import ir
from derivgraph.compiler import lower as lower_mod
from derivgraph.planner import compile_plan
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs

made = [0]
_make = ir.HeldNode.made


def _counted(node: ir.HeldNode) -> ir.Node:
    made[0] += 1
    return _make(node)


ir.HeldNode.made = _counted  # type: ignore[method-assign]
spent = [0.0]
_columns = lower_mod.LayerSteps.columns.func  # a cached_property's function


def _timed(self: Any) -> Any:
    t = time.process_time()
    try:
        return _columns(self)
    finally:
        spent[0] += time.process_time() - t


lower_mod.LayerSteps.columns = lower_mod.cached_property(_timed)  # type: ignore[assignment]
lower_mod.LayerSteps.columns.__set_name__(lower_mod.LayerSteps, "columns")

layers = int(sys.argv[1])
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 1
model = DeepseekModel(scale=1 / 256, layers=layers, experts=8)
model.reload(0)
model.post_load()
compile_plan(model, deepseek_specs())  # warm
totals, cols, counts = [], [], []
for _ in range(repeats):
    made[0], spent[0] = 0, 0.0
    t0 = time.process_time()
    plan = compile_plan(model, deepseek_specs())
    totals.append(time.process_time() - t0)
    cols.append(spent[0])
    counts.append(made[0])
print(json.dumps({"tree": os.environ.get("PYTHONPATH", ""), "layers": layers,
                  "nodes": len(plan.graph.ir.nodes), "compile": sorted(totals)[len(totals) // 2],
                  "layer_columns": sorted(cols)[len(cols) // 2], "made": counts[-1]}))
