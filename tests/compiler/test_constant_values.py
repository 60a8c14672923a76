"""``plan.constant_values``: the constant entries' eager values that are tensors, by id in the
constant entries' order (``planner._tensor_values``: C-level sweeps). Canary: an id whose
value is missing, a Python number or None is left out, and a tensor subclass is kept, exactly
as the per-id comprehension it replaced."""

from __future__ import annotations

import torch
from torch import nn

from derivgraph import planner
from derivgraph.planner import _tensor_values, compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _per_id(ids: list[str], values: dict[str, object]) -> dict[str, object]:
    return {n: v for n in ids if isinstance(v := values.get(n), torch.Tensor)}


def test_only_tensor_values_in_order() -> None:
    t, p = torch.ones(2), nn.Parameter(torch.zeros(3), requires_grad=False)
    values = {"a": t, "b": 2.0, "c": None, "d": p, "e": 7}
    ids = ["d", "missing", "b", "a", "c", "e"]
    got = _tensor_values(ids, values)
    assert list(got.items()) == [("d", p), ("a", t)]
    assert list(got.items()) == list(_per_id(ids, values).items())
    assert _tensor_values([], values) == {}


def test_a_compiled_plans_constant_values() -> None:
    layers = 5
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    assert plan.constant_entries == [f"layers.{i}.strides" for i in range(layers)]
    assert list(plan.constant_values) == plan.constant_entries
    for n, value in plan.constant_values.items():
        assert value.dtype is torch.int64 and value.tolist() == [7] * 8
        assert value is not plan.entries[n].storage  # the eager value, not the held storage


def test_tensors_constants_are_the_source_free_ops() -> None:
    """``plan.tensors.constants``: the graph's ops that no source feeds and whose eager value
    is a tensor, in the nodes' order (the per-node rule, written out here). Canary: the
    scaling model's ops that read a source (``1.0 / scale``, ``scale * weight``) are left
    out, the source-free ``full`` op is in."""
    from derivgraph.compiler.ir import NodeKind

    captured: dict[str, object] = {}
    lower = planner._lower

    def spy(plan: object, values: dict[str, object], *rest: object, **kw: object) -> None:
        captured["values"] = values
        lower(plan, values, *rest, **kw)  # type: ignore[arg-type]

    planner._lower = spy  # type: ignore[assignment]
    try:
        plan = compile_plan(scaling_model(5), [scaling_spec()])
    finally:
        planner._lower = lower
    values = captured["values"]
    assert isinstance(values, dict)
    graph = plan.graph
    deps, nodes = graph.source_deps(), graph.nodes
    expected = {n: values[n] for n in nodes if nodes[n].kind is NodeKind.OP and not deps[n]
                and isinstance(values.get(n), torch.Tensor)}
    got = plan.tensors.constants
    assert list(got) == list(expected) and all(got[n] is expected[n] for n in expected)
    assert {nodes[n].op for n in got} == {"full"}
    assert any(nodes[n].kind is NodeKind.OP and deps[n] for n in nodes)  # some were left out
