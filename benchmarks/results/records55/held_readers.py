"""Which compile and refill readers make held nodes (records55): per workload, how many graph
nodes stay held after ``compile_plan`` and which caller made the others (``HeldNode.made``
wrapped), then the same after a ``refill`` of the stamped scaling model.

    PYTHONPATH=TREE python3 held_readers.py > held_readers.txt
"""

from __future__ import annotations

import collections
import sys
from typing import Any

import torch

from derivgraph.compiler import ir
from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

who: collections.Counter[tuple[Any, ...]] = collections.Counter()
_made = ir.HeldNode.made


def _counted(self: ir.HeldNode) -> ir.Node:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.endswith("ir.py"):
        frame = frame.f_back
    assert frame is not None
    who[(frame.f_code.co_filename.split("/derivgraph/")[-1], frame.f_code.co_name,
         frame.f_lineno, type(self).kind)] += 1
    return _made(self)


ir.HeldNode.made = _counted  # type: ignore[method-assign]


def held(plan: Any) -> int:
    return sum(isinstance(n, ir.HeldNode) for n in plan.graph.ir.nodes.values())


def report(name: str, plan: Any) -> None:
    print(f"{name}: nodes {len(plan.graph.ir.nodes)} held {held(plan)} made {sum(who.values())}")
    for key, count in who.most_common(12):
        print(f"  {count} {key}")
    who.clear()


model = scaling_model(1000)
plan = compile_plan(model, [scaling_spec()])
report("scaling 4000 compile", plan)
with torch.no_grad():
    for p in model.parameters():
        p.add_(1.0)
plan.refill()
plan.refill(verify=True)
report("scaling 4000 refill", plan)
for workload in ("reference", "deepseek"):
    wmodel, specs, *_ = _workload("cpu", workload, 61, None)
    report(f"{workload} compile", compile_plan(wmodel, specs))
