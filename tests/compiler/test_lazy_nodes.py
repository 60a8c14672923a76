"""Lazy graph nodes (issue 20.4, rows39 DESIGN (b3)): a derived tensor's ``ir.Node`` and a
stamped row's sources and ops are not made when they are added;
:class:`~derivgraph.compiler.ir.Nodes` records each id at its insertion position with what its
node is made of (the :class:`DerivedNode`, or the ``Node``'s fields) and makes the node when
something first reads it.

The mapping is checked as values (ids in insertion order with the lazy spans merged, ``len``,
``in``, ``get``, one object per id, a node added over a lazy id at its position), and built
graphs (stamped scaling, rows reading each other, a row opened by a reader before or after its
replay) against the same graph built with every node made at once (the rule before: the
oracle): the same ids in the same order, the same sources, order, fields and users; the
closed rows' nodes are never made, the lowering's column of op arguments is read from the
records. Canaries: spans merged out of order or recorded one node early, a lazy node's input
kept off the users, lazy sources' kind misread: each differs from the oracle.
"""

from __future__ import annotations

from typing import Any

import pytest
from torch import nn

from derivgraph.compiler import build as build_module
from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.graph import DerivedGraph, DerivedNode
from derivgraph.compiler.ir import Graph, Node, NodeKind, Nodes
from derivgraph.compiler.layers import closed_layers, layer_nodes
from derivgraph.compiler.stamp import stamping
from derivgraph.spec.model import Spec
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_open_rows import _model as _open_model
from tests.compiler.test_open_rows import _specs as _open_specs
from tests.compiler.test_order_blocks import chain_specs


def _nodes() -> tuple[Nodes, list[str]]:
    """Explicit a, lazy x y, explicit b c, lazy z: made by ``build`` as op nodes."""
    nodes = Nodes()
    nodes.build = lambda node_id, record: Node(node_id, NodeKind.OP, op=record)
    nodes["a"] = Node("a", NodeKind.SOURCE)
    nodes.add_lazy("x", "mul")
    nodes.add_lazy("y", "add")
    nodes["b"] = Node("b", NodeKind.SOURCE)
    nodes["c"] = Node("c", NodeKind.SOURCE)
    nodes.add_lazy("z", "neg")
    return nodes, ["a", "x", "y", "b", "c", "z"]


def test_lazy_ids_read_as_nodes_at_their_insertion_position() -> None:
    nodes, order = _nodes()
    assert list(nodes) == order and len(nodes) == 6 and list(nodes.keys()) == order
    assert "y" in nodes and "q" not in nodes and nodes.get("q") is None
    assert nodes._made == 0
    y = nodes["y"]
    assert (y.id, y.kind, y.op) == ("y", NodeKind.OP, "add")
    assert nodes["y"] is y and nodes.get("y") is y  # made once, then held
    assert nodes._made == 1 and nodes.lazy("y") is None and nodes.lazy("x") == "mul"
    assert list(nodes) == order and len(nodes) == 6  # a made node keeps its position
    assert [n.op for n in nodes.values()] == [None, "mul", "add", None, None, "neg"]
    assert [k for k, _ in nodes.made_items()] == ["a", "b", "c", "y", "x", "z"]
    with pytest.raises(KeyError):
        nodes["q"]
    with pytest.raises(TypeError):
        nodes.pop("a")


def test_a_node_added_over_a_lazy_id_takes_its_position() -> None:
    g = Graph()
    g.build = lambda node_id, record: Node(node_id, NodeKind.DERIVED)
    g.add(Node("s", NodeKind.SOURCE))
    g.add_lazy("d", "record")
    g.add(Node("t", NodeKind.SOURCE))
    g.add(Node("d", NodeKind.OP, op="x", inputs=("s",)))
    assert list(g.nodes) == ["s", "d", "t"] and g.nodes["d"].op == "x" and len(g.nodes) == 3
    assert g.users == {"s": ["d"], "d": [], "t": []}


def test_a_graph_with_no_lazy_id_is_a_plain_dict() -> None:
    g = Graph()
    g.add(Node("s", NodeKind.SOURCE))
    g.add(Node("%1:neg", NodeKind.OP, op="neg", inputs=("s",)))
    assert type(g.nodes) is dict and list(g.nodes) == ["s", "%1:neg"]
    g.build = lambda node_id, record: Node(node_id, NodeKind.DERIVED)
    g.add_lazy("d", "record")  # the first lazy id: the same nodes, in order, as a Nodes
    assert type(g.nodes) is Nodes and list(g.nodes) == ["s", "%1:neg", "d"]
    assert g.nodes["d"].kind is NodeKind.DERIVED and g.kind("s") is NodeKind.SOURCE


def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule before: every derived tensor's node made when it is added."""
    monkeypatch.setattr(DerivedGraph, "add_derived", lambda self, node: (
        self.derived.__setitem__(node.id, node), self.ir.add(Node(node.id, NodeKind.DERIVED))))


_place, _op_keyed = DerivedGraph.place_source, DerivedGraph.op_keyed


def _eager_source(self: DerivedGraph, path: str, tensor: Any, layout: Any = None,
                  lazy: Any = None) -> bool:
    return _place(self, path, tensor, layout)


def _eager_op(self: DerivedGraph, name: str, args: Any, kwargs: Any, key: Any, refs: Any,
              lazy: Any = None) -> str:
    return _op_keyed(self, name, args, kwargs, key, refs)


def _built(specs: list[Spec], layers: int = 5) -> DerivedGraph:
    model = scaling_model(layers)
    bound = match_specs(model, specs)
    check_bindings(bound)
    with stamping(True):
        return build_graph(model, bound)


def _facts(graph: DerivedGraph) -> tuple[Any, ...]:
    nodes = graph.nodes
    sources = graph.sources()  # before any node is made here
    return (list(nodes), len(nodes), sources, graph.ordered(),
            [(n.kind, n.op, n.args, n.kwargs, n.inputs, n.shape, n.stride, n.dtype, n.device)
             for n in nodes.values()], graph.ir.users)


@pytest.mark.parametrize("specs", [lambda: [scaling_spec()], chain_specs],
                         ids=["scaling", "chain+reader"])
def test_a_built_graph_reads_as_the_eager_one(monkeypatch: pytest.MonkeyPatch,
                                              specs: Any) -> None:
    graph = _built(specs())
    lazy = graph.nodes.records
    assert set(graph.derived) <= set(lazy)  # every derived tensor lazy, and each row's
    closed = layer_nodes(closed_layers(graph))  # closed rows' nodes: lazy, never made
    assert closed and closed <= set(lazy) and not any(map(graph.nodes.made_get, closed))
    got = _facts(graph)
    with monkeypatch.context() as m:
        _eager(m)
        m.setattr(DerivedGraph, "place_source", _eager_source)
        m.setattr(DerivedGraph, "op_keyed", _eager_op)
        want = _facts(_built(specs()))
    assert got == want


@pytest.mark.parametrize("first", [True, False], ids=["reader-first", "reader-after"])
@pytest.mark.parametrize("read", ["derived", "source", "cse"])
def test_an_open_row_reads_as_the_eager_one(monkeypatch: pytest.MonkeyPatch, read: str,
                                            first: bool) -> None:
    """A spec reading layer 2 (its derived tensor, its source, its op by CSE), resolved
    before or after the rows' replays: the row's nodes are read where they were inserted."""
    def built() -> tuple[Any, ...]:
        model = _open_model()
        bound = match_specs(model, _open_specs(read, first)())
        check_bindings(bound)
        with stamping(True):
            return _facts(build_graph(model, bound))

    got = built()
    with monkeypatch.context() as m:
        _eager(m)
        m.setattr(DerivedGraph, "place_source", _eager_source)
        m.setattr(DerivedGraph, "op_keyed", _eager_op)
        assert built() == got


def test_a_rows_op_arguments_are_read_from_its_record() -> None:
    graph = _built([scaling_spec()])
    [table] = graph.stamps
    ops = [k for k, n in enumerate(table.template) if n.startswith("%")]
    column = table.column(ops[-1])
    got = graph.op_args(column)
    assert not any(map(graph.nodes.made_get, column))  # read, not made
    assert got == [(graph.nodes[n].args, graph.nodes[n].kwargs) for n in column]
    assert got[0][0][0].id == "layers.1.scale"  # scale * weight, renamed per row


def test_a_lazy_nodes_kind_is_read_from_its_record() -> None:
    graph = _built([scaling_spec()])
    [table] = graph.stamps
    row = table.rows[0]
    kinds = [graph.kind(n) for n in row]
    assert not any(map(graph.nodes.made_get, row))  # read, not made
    assert kinds == [graph.nodes[n].kind for n in row]
    assert kinds.count(NodeKind.DERIVED) == 4 and kinds.count(NodeKind.SOURCE) == 2
    with pytest.raises(KeyError):
        graph.kind("no.such.node")


def test_canary_lazy_sources_recorded_as_ops() -> None:
    """Planted: the rows' source records say op: they drop out of ``sources()`` (the rule
    reads each record's kind)."""
    graph = _built([scaling_spec()])
    got = graph.sources()
    records = graph.ir.nodes.records
    for n in got[2:]:  # the rows' sources, recorded as ops
        records[n] = (n, NodeKind.OP, *records[n][2:])
    graph.ir.version += 1
    assert graph.sources() == ["layers.0.scale", "layers.0.weight"] and len(got) == 10


def test_scaling_makes_only_the_templates_derived_nodes() -> None:
    """Stamped scaling: building (resolution, order, source deps, shapes) reads no closed
    row's derived node; only the template's four are made."""
    graph = _built([scaling_spec()], layers=6)
    assert graph.stamped == 5 and graph.nodes._made == 4
    assert graph.ordered()[:2] == ["layers.0.scale", "%1:div"]


def test_a_derived_node_read_before_its_input_gets_it() -> None:
    graph = DerivedGraph(nn.Module())
    spec = scaling_spec()
    node = DerivedNode("d", None, spec.derived[0], "")  # type: ignore[arg-type]
    graph.add_derived(node)
    assert graph.nodes["d"].inputs == () and graph.nodes._made == 1
    graph.ir.add(Node("s", NodeKind.SOURCE))
    graph.place_input(node, "s")
    assert graph.nodes["d"].inputs == ("s",) and graph.ir.users["s"] == ["d"]
    other = DerivedNode("e", None, spec.derived[0], "")  # type: ignore[arg-type]
    graph.add_derived(other)
    graph.place_input(other, "s")
    graph.place_input(other, "d")  # a lazy node's inputs move: its users follow
    assert graph.ir.users == {"d": ["e"], "s": ["d"], "e": []} and graph.nodes._made == 1
    assert graph.nodes["e"].inputs == ("d",) and list(graph.nodes) == ["d", "s", "e"]


def test_canary_a_span_merged_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the lazy ids merged after every explicit node (not at their spans): the
    built graph's ids, sources' order aside, come out in another order than the eager
    graph's; a span recorded one explicit node early shows on a small graph."""
    def appended(self: Nodes) -> list[str]:
        explicit = [n for n in dict.__iter__(self) if n not in self.records]
        return explicit + [n for _, ids in self._spans for n in ids]

    got = list(_built(chain_specs()).nodes)
    with monkeypatch.context() as m:
        m.setattr(Nodes, "_ids", appended)
        planted = list(_built(chain_specs()).nodes)
    assert sorted(planted) == sorted(got) and planted != got
    real = Nodes.add_lazies

    def early(self: Nodes, items: Any) -> None:
        real(self, items)
        at, span = self._spans[-1]
        self._spans[-1] = (max(at - 1, 0), span)

    monkeypatch.setattr(Nodes, "add_lazies", early)
    g = Graph()
    g.build = lambda node_id, record: Node(node_id, NodeKind.DERIVED)
    g.add(Node("s", NodeKind.SOURCE))
    g.add(Node("t", NodeKind.SOURCE))
    g.add_lazy("d", "record")
    assert list(g.nodes) == ["s", "d", "t"]  # the planted bug shows (the rule: s, t, d)


def test_canary_a_lazy_input_kept_off_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: a lazy node's input set on the DerivedNode only: the users differ from the
    eager graph's (the lowering reads them)."""
    def quiet(self: DerivedGraph, values: list[tuple[DerivedNode, str]]) -> None:
        for node, value_id in values:
            node.input = value_id

    got = _built([scaling_spec()])
    with monkeypatch.context() as m:
        m.setattr(DerivedGraph, "place_inputs", quiet)
        planted = _built([scaling_spec()])
    assert planted.ir.users != got.ir.users
    with monkeypatch.context() as m:
        _eager(m)
        assert _built([scaling_spec()]).ir.users == got.ir.users



def _plain_built() -> DerivedGraph:
    model = scaling_model(5)
    bound = match_specs(model, [scaling_spec()])
    check_bindings(bound)
    with stamping(False):
        return build_graph(model, bound)


def test_stamping_off_makes_every_node_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain path reads every derived node (its order's roots): no lazy id there, the
    graph the eager one."""
    graph = _plain_built()
    assert graph.stamped == 0 and type(graph.nodes) is dict
    got = _facts(graph)
    with monkeypatch.context() as m:
        _eager(m)
        assert _facts(_plain_built()) == got


def test_canary_stamping_off_taken_as_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the derived loop asks for lazy nodes with stamping off: lazy ids appear
    (each made again on its first read)."""
    monkeypatch.setattr(build_module, "stamping_enabled", lambda: True)
    graph = _plain_built()
    assert graph.stamped == 0 and len(graph.nodes.records) == len(graph.derived)
