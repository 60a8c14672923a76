"""``BoundTensors.bind`` skips the bound table and the view sweep where the graph names no view
op (:func:`~derivgraph.runtime.storage.may_view`, read off ``graph.op_names``): there the sweep
(:meth:`BoundViews.views`) finds nothing whatever its tensors, and where a view op is named
the views are made as before."""

from __future__ import annotations

from itertools import compress, repeat
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler.stamp import stamping
from derivgraph.ops import OPS, OpKind
from derivgraph.planner import compile_plan
from derivgraph.runtime.storage import BoundViews, may_view
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(4, 3) + 0.5, requires_grad=False)


class Stack(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Toy() for _ in range(n))


def _view_spec() -> Spec:
    return Spec(name="views", target=Target(module_class=["Toy"]),
                derived=[DerivedTensor(name="inv_t", kind="attribute",
                                       formula="reciprocal(transpose(weight, 0, 1))")])


def _swept(plan: Any) -> dict[str, torch.Tensor]:
    """The views the full sweep makes over the plan's bound tensors (the reference)."""
    tensors = plan.tensors
    bound: dict[str, Any] = {**tensors.sources, **tensors.constants}
    storages = [e.storage for e in tensors.entries.values()]
    bound.update(compress(zip(tensors.entries, storages),
                          map(isinstance, storages, repeat(torch.Tensor))))
    return BoundViews(plan.graph, bound).views()


@pytest.mark.parametrize("stamped", [False, True])
def test_no_view_op_no_views(stamped: bool) -> None:
    with stamping(stamped):
        plan = compile_plan(scaling_model(12), [scaling_spec()])
    views = {n for n, op in OPS.items() if op.kind is OpKind.VIEW}
    assert plan.graph.op_names and plan.graph.op_names.isdisjoint(views)
    assert not may_view(plan.graph)
    assert plan.tensors.views == {} == _swept(plan)


@pytest.mark.parametrize("stamped", [False, True])
def test_view_op_views_made(stamped: bool) -> None:
    model = Stack(10)
    with stamping(stamped):
        plan = compile_plan(model, [_view_spec()])
    assert "transpose" in plan.graph.op_names and may_view(plan.graph)
    swept = _swept(plan)
    assert swept and list(plan.tensors.views) == list(swept)
    for key, view in plan.tensors.views.items():
        assert view.data_ptr() == swept[key].data_ptr() and view.shape == swept[key].shape
    plan.run()
    for layer in model.layers:
        assert torch.equal(layer.inv_t, 1.0 / layer.weight.t())


def test_unregistered_op_name_is_swept() -> None:
    """An op name no registered op has (never made by a compile) leaves the sweep to decide."""
    plan = compile_plan(scaling_model(4), [scaling_spec()])
    plan.graph.op_names.add("no_such_op_registered")
    assert may_view(plan.graph)
