"""A run's derived tensors held by column (``graph.HeldDerived``, made by
``build._derived_columns``): each node made on its column's first read, with what the
stamper (inputs) and shape inference (meta values, devices) wrote to the column, equal field
by field to the node made eagerly; ``in``, iteration and the ids make no node. Canaries:
a column made without its inputs, or without its meta values, is seen; writes after a
column was made go to its nodes; a column read through ``derived_node`` makes only itself."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, HeldDerived
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.stamp import stamping
from derivgraph.spec.model import DerivedTensor
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _fields(node: DerivedNode) -> tuple[Any, ...]:
    meta = node.meta
    return (node.id, node.bound.module_path, node.decl, node.owner_path, node.input,
            node.device, node.params, node.kind,
            None if meta is None else (tuple(meta.shape), meta.dtype, meta.device.type))


def _graph(model: Any, stamp: bool) -> DerivedGraph:
    with stamping(stamp):
        return build.build_graph(model, match_specs(model, [scaling_spec()]))


def _held_after_build(model: Any) -> tuple[DerivedGraph, list[HeldDerived]]:
    graph = _graph(model, True)
    return graph, graph.held_columns()


def test_held_nodes_equal_the_nodes_made_without_stamping() -> None:
    model = scaling_model(9)
    graph, held = _held_after_build(model)
    assert len(held) == 4 and all(column.made is None for column in held)  # nothing made
    assert len(graph.derived_ids) == 36 and "layers.5.prod" in graph.derived_ids
    assert graph.held_columns() == held  # ids and `in` made nothing
    plain = _graph(model, False)
    assert not plain.held_columns()
    lazy = [_fields(n) for n in graph.derived.values()]
    assert not graph.held_columns() and all(column.made is not None for column in held)
    assert lazy == [_fields(n) for n in plain.derived.values()]
    assert all(type(n) is DerivedNode for n in graph.derived.values())
    # the made nodes are the columns' own (made once)
    assert graph.derived["layers.4.inv"] is held[0].nodes()[3]


@pytest.mark.parametrize("broken", ["inputs", "metas", "devices"])
def test_canary_a_column_made_without_what_was_written_is_seen(
        broken: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bugs: the column forgets the inputs the stamper gave it, the meta values or
    the devices inference gave it (its nodes then differ from the plain build's)."""
    model = scaling_model(5)
    plain = [_fields(n) for n in _graph(model, False).derived.values()]
    real = HeldDerived.nodes

    def forgetful(self: HeldDerived) -> list[DerivedNode]:
        if self.made is None:
            if broken == "devices":
                self.devices = [torch.device("meta")] * len(self.ids)
            else:
                setattr(self, broken, None)
        return real(self)

    monkeypatch.setattr(HeldDerived, "nodes", forgetful)
    graph, held = _held_after_build(model)
    assert held
    assert [_fields(n) for n in graph.derived.values()] != plain


def _column(graph: DerivedGraph, name: str, rows: int) -> HeldDerived:
    decl = DerivedTensor(name=name, kind="attribute", formula="w + 1")
    ids = [f"l.{i}.{name}" for i in range(rows)]
    bound = [object()] * rows
    column = HeldDerived(ids, bound, decl, [f"l.{i}" for i in range(rows)],  # type: ignore
                         [torch.device("cpu")] * rows, [{}] * rows, build.tensor_kind(decl))
    return column


def _held_graph() -> tuple[DerivedGraph, HeldDerived, HeldDerived]:
    graph = DerivedGraph(torch.nn.Module())
    a, b = _column(graph, "a", 3), _column(graph, "b", 3)
    ids = [i for row in zip(a.ids, b.ids) for i in row]
    graph.hold_derived([a, b], ids)
    return graph, a, b


def test_ids_and_in_make_no_node_and_a_read_makes_them_in_order() -> None:
    graph, a, b = _held_graph()
    made = DerivedNode(id="m", bound=None, decl=a.decl, owner_path="")  # type: ignore[arg-type]
    assert list(graph.derived_ids) == ["l.0.a", "l.0.b", "l.1.a", "l.1.b", "l.2.a", "l.2.b"]
    assert "l.1.b" in graph.derived_ids and "l.1.b" in graph.derived_view
    assert graph.derived_each(["l.2.a", "m", "l.0.b"]) == [True, False, True]
    assert not graph.derived_ids.isdisjoint({"x", "l.2.b"})
    assert graph.derived_ids.isdisjoint(["x"]) and len(graph.derived_ids) == 6
    assert graph.derived_node("nope") is None and "nope" not in graph.derived_view
    assert a.made is None and b.made is None  # nothing read yet
    graph.add_derived(made)  # an add after a held run: the run's nodes go in first
    assert a.made is not None and b.made is not None
    assert list(graph.derived) == ["l.0.a", "l.0.b", "l.1.a", "l.1.b", "l.2.a", "l.2.b", "m"]
    assert graph.derived_node("l.1.b") is b.nodes()[1] and graph.derived["m"] is made


def test_derived_node_of_a_held_id_makes_the_held_nodes() -> None:
    graph, a, b = _held_graph()
    ids = graph.derived_ids  # read before: still the ids, once, after the nodes are made
    assert graph.derived_view["l.2.b"] is b.nodes()[2]
    assert list(ids) == list(graph.derived) and len(ids) == 6
    assert not graph.held_columns() and list(graph.derived_view) == list(graph.derived)


def test_writes_go_to_the_column_before_it_is_made_and_to_its_nodes_after() -> None:
    graph, a, b = _held_graph()
    graph.place_made_inputs(a, a.ids, ["x0", "x1", "x2"])
    a.set_all("meta", "m")
    assert a.made is None and a.input_values() == ["x0", "x1", "x2"]
    assert [(n.input, n.meta) for n in a.nodes()] == [("x0", "m"), ("x1", "m"), ("x2", "m")]
    a.set_inputs(["y0", "y1", "y2"])  # made: the nodes take it
    a.set_all("device", torch.device("meta"))
    assert [(n.input, n.device.type) for n in a.nodes()] == \
        [("y0", "meta"), ("y1", "meta"), ("y2", "meta")]
    assert a.input_values() == ["y0", "y1", "y2"]
    with pytest.raises(ValueError, match="one value per node"):
        b.set_inputs(["z"])
    with pytest.raises(ValueError, match="does not hold"):
        b.set_all("params", {})


def test_column_inputs_take_the_per_node_path_once_a_column_is_made() -> None:
    """``place_column_inputs``: held columns take their values as columns; a made one
    (canary for the held-only shortcut) gets them node by node, with the same graph."""
    for make_first in (False, True):
        graph, a, b = _held_graph()
        for node_id in list(graph.derived_ids):  # the value nodes
            graph.ir.add(Node(f"v.{node_id}", NodeKind.SOURCE))
        if make_first:
            a.nodes()
        values = [[f"v.{i}" for i in a.ids], [f"v.{i}" for i in b.ids]]
        graph.place_column_inputs([a, b], [a.ids, b.ids], values)
        assert [n.input for n in graph.derived.values()] == \
            [f"v.{i}" for i in graph.derived_ids]
        assert [graph.ir.nodes[i].inputs for i in graph.derived_ids] == \
            [(f"v.{i}",) for i in graph.derived_ids]


def _engine_model() -> Any:
    model = scaling_model(6)
    for i, layer in enumerate(model.layers):
        layer.table = torch.full((3,), float(i))
    return model


def _engine_specs() -> list[Any]:
    from derivgraph import DerivedTensor, Spec

    return [Spec(name="engine_table", target=scaling_spec().target,
                 params={"E": "scale.shape[0]"},
                 derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                          DerivedTensor(name="table", kind="engine")])]


def test_held_engine_tensors_take_the_engines_layout_as_made_ones() -> None:
    """An engine tensor's meta comes from the engine, read before inference's rows: a held
    column of them is made first (refusal of the held rows' shortcut there), so every row
    gets it as the plain build's does."""
    model, specs = _engine_model(), _engine_specs()
    held: list[bool] = []
    real = build.HeldDerived.nodes

    def spy(self: HeldDerived) -> list[DerivedNode]:
        if self.made is None and self.kind.value == "engine":
            held.append(self.inputs is None)
        return real(self)

    with stamping(True), pytest.MonkeyPatch.context() as patch:
        patch.setattr(build.HeldDerived, "nodes", spy)
        graph = build.build_graph(model, match_specs(model, specs))
        assert held == [True]  # the engine column was held, and made before inference
    with stamping(False):
        plain = build.build_graph(model, match_specs(model, specs))
    engine = [n for n in plain.derived if n.endswith(".table")]
    assert len(engine) == 6
    assert all(tuple(graph.meta_env[n].shape) == (3,) for n in engine)
    assert [_fields(n) for n in graph.derived.values()] == \
        [_fields(n) for n in plain.derived.values()]
