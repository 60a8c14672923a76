"""How many held users lists (``ir.Users``) the compile and refills make (rows57), per workload:
the lists held by columns, those made (read or written since), and the dict's own lists.

    PYTHONPATH=TREE python3 held_users_probe.py [LAYERS] > held_users_probe.txt
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def report(name: str, plan: Any) -> None:
    users = plan.graph.ir.users
    held = sum(len(ids) for _, ids in users._held)
    print(f"{name}: nodes {len(plan.graph.ir.nodes)} keys {len(users)} own lists "
          f"{dict.__len__(users)} held {held} held made {len(users._made)}")


layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
model = scaling_model(layers)
plan = compile_plan(model, [scaling_spec()])
report(f"scaling {layers} layers compile", plan)
with torch.no_grad():
    for p in model.parameters():
        p.add_(1.0)
plan.refill()
plan.refill(verify=True)
report(f"scaling {layers} layers after refill, refill(verify)", plan)
for workload in ("reference", "deepseek"):
    wmodel, specs, *_ = _workload("cpu", workload, 61, None)
    report(f"{workload} compile", compile_plan(wmodel, specs))
