"""An operand column two op columns of one table read (the scaling workload's ``scale``: read
by ``1.0 / scale`` and by ``scale * weight``) is checked and stacked once
(:func:`derivgraph.compiler.columns._column`'s ``stacks``): the values stay bit for bit the
per-node evaluation's, and a recorded stack is taken only for the very same tensors."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import derivgraph.compiler.columns as columns
from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compare import bits_equal
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.layers import closed_layers
from derivgraph.planner import CompileValues
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12


def _shared_spec() -> Spec:
    """Three op columns over two operand columns, ``scale`` read by all three."""
    return Spec(name="shared", target=Target(module_class=["ScalingLayer"]), derived=[
        DerivedTensor(name="a", kind="attribute", formula="sqrt(scale)"),
        DerivedTensor(name="b", kind="attribute", formula="maximum(scale, weight)"),
        DerivedTensor(name="c", kind="attribute", formula="weight - scale")])


def _graph(spec: Spec) -> Any:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    return build_graph(model, match_specs(model, [spec]))


@pytest.mark.parametrize("spec, columns_done, stacks", [(scaling_spec(), 2, 2),
                                                        (_shared_spec(), 3, 2)],
                         ids=["scaling", "shared"])
def test_operand_column_stacked_once(monkeypatch: pytest.MonkeyPatch, spec: Spec,
                                     columns_done: int, stacks: int) -> None:
    graph = _graph(spec)
    made: list[int] = []
    real = torch.stack

    def counted(tensors: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
        made.append(len(tensors))
        return real(tensors, *args, **kwargs)

    monkeypatch.setattr(columns.torch, "stack", counted)
    with torch.no_grad():
        interp = CompileValues(graph)
        done = columns.evaluate_columns(graph, interp.env, interp.source_at)
        got = interp.run()
    monkeypatch.undo()
    with torch.no_grad():
        want = CompileValues(graph).run()
    assert done == columns_done and len(made) == stacks  # one stack per operand column
    assert got.keys() == want.keys() and all(bits_equal(got[k], want[k]) for k in want)


def test_recorded_stack_of_other_tensors_not_taken() -> None:
    """A recorded operand whose tensors are not these objects (equal bits, other tensors) is
    checked and stacked again: its stack (planted here with other values) is not used."""
    graph = _graph(scaling_spec())
    table = closed_layers(graph)[0]
    where = {t: i for i, t in enumerate(table.template)}
    nodes = graph.nodes
    k = next(i for i, t in enumerate(table.template)
             if nodes[t].kind is columns._OP and nodes[t].op == "div")
    first = nodes[table.template[k]]
    ref = next(a for a in first.args if type(a) is columns.NodeRef)
    at = where[ref.id]
    with torch.no_grad():
        interp = CompileValues(graph)
        tensors = columns._operands(interp.env, interp.source_at, table.column(at), True)
        assert tensors is not None
        clones = [t.clone() for t in tensors]
        planted = torch.full_like(torch.stack(tensors), 99.0)
        layout = (tensors[0].shape, tensors[0].dtype, tensors[0].device)
        stacks: dict[Any, Any] = {at: (clones, layout, planted)}
        values = columns._column(graph, interp.env, interp.source_at, table, where, first,
                                 table.column(k), stacks)
        assert values is not None
        for value, scale in zip(values, tensors):
            assert bits_equal(value, 1.0 / scale)
        assert stacks[at][0] is not clones  # recorded again: these tensors
        same = columns._column(graph, interp.env, interp.source_at, table, where, first,
                               table.column(k), {at: (list(tensors), layout, planted)})
        assert same is not None and all(bool((v == 1.0 / 99.0).all()) for v in same)
