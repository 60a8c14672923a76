"""The topological order takes a closed stamped row's walk from its template's
(:func:`derivgraph.compiler.layers.row_blocks`): the order is the plain walk's, node for node,
and a template whose derived tensors do not reach all its nodes gives no block."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.ir import Graph, Node, NodeKind
from derivgraph.compiler.layers import closed_layers, row_blocks
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plain_order(nodes: dict[str, Node]) -> list[str]:
    """The walk without blocks, on a fresh graph holding the same nodes."""
    plain = Graph()
    plain.nodes = nodes
    plain.version = 1
    return plain.order()


def _compiled(model: nn.Module, specs: list[Spec]) -> Any:
    with stamping(True):
        return compile_plan(model, specs).graph


def test_scaling_order_is_the_plain_walk() -> None:
    graph = _compiled(scaling_model(6), [scaling_spec()])
    blocks = row_blocks(graph, closed_layers(graph))
    assert len(blocks) == graph.stamped == 5  # every stamped row took its template's walk
    assert blocks["layers.3.inv"] == ("layers.3.scale", "%8:div", "layers.3.inv",
                                      "layers.3.weight", "%9:mul", "layers.3.prod",
                                      "layers.3.strides", "layers.3.scale_alias")
    assert graph.ordered() == _plain_order(graph.nodes)


def chain_specs() -> list[Spec]:
    """Derived tensors reading derived tensors of their layer (by name), and a spec on the
    stack reading layer 2's source."""
    spec = Spec(name="chain", target=Target(module_class=["ScalingLayer"]),
                derived=[DerivedTensor(name="b", kind="attribute", formula="a * weight"),
                         DerivedTensor(name="a", kind="attribute", formula="scale + 1.0"),
                         DerivedTensor(name="c", kind="attribute", formula="b - a")])
    reader = Spec(name="reader", target=Target(module_class=["ScalingStack"]),
                  derived=[DerivedTensor(name="r", kind="attribute",
                                         formula="layers[2].scale * 2.0")])
    return [spec, reader]


def test_rows_reading_each_other_and_an_open_row() -> None:
    """Derived tensors reading derived tensors of their row, and a row whose source another
    spec reads (not closed: walked as before)."""
    graph = _compiled(scaling_model(5), chain_specs())
    blocks = row_blocks(graph, closed_layers(graph))
    assert graph.stamped == 4 and "layers.1.b" in blocks and "layers.2.b" not in blocks
    assert graph.ordered() == _plain_order(graph.nodes)


def test_a_template_node_its_derived_tensors_do_not_reach_gives_no_block() -> None:
    """``t_extra`` (say, a source made and not read) is walked as a root of its own, after
    every derived tensor: a block for its rows would emit their derived tensors' walk and
    drop their extra node."""
    g = Graph()
    for d, src in (("t", "t_src"), ("r1", "r1_src"), ("r2", "r2_src")):
        g.add(Node(d, NodeKind.DERIVED, inputs=(src,)))
    for name in ("t_src", "t_extra", "r1_src", "r1_extra", "r2_src", "r2_extra"):
        g.add(Node(name, NodeKind.SOURCE))
    derived = dict.fromkeys(("t", "r1", "r2"))
    graph = SimpleNamespace(nodes=g.nodes, derived=derived, derived_ids=derived.keys())
    table = InstanceTable(("t", "t_src", "t_extra"),
                          [("r1", "r1_src", "r1_extra"), ("r2", "r2_src", "r2_extra")])
    assert row_blocks(graph, [table]) == {}  # type: ignore[arg-type]
    reached = InstanceTable(("t", "t_src"), [("r1", "r1_src"), ("r2", "r2_src")])
    assert row_blocks(graph, [reached]) == {  # type: ignore[arg-type]
        "r1": ("r1_src", "r1"), "r2": ("r2_src", "r2")}
    want = ["t_src", "t", "r1_src", "r1", "r2_src", "r2", "t_extra", "r1_extra", "r2_extra"]
    assert g.order(row_blocks(graph, [table])) == want == _plain_order(g.nodes)  # type: ignore[arg-type]


def test_a_row_whose_derived_tensors_were_inserted_in_another_order_gives_no_block() -> None:
    """A row recording its derived tensors in another order than they were inserted (a
    stamper bug) is walked as before: its block would start the walk at the wrong one."""
    g = Graph()
    for d in ("ta", "tb", "ra", "rb", "sa", "sb"):
        g.add(Node(d, NodeKind.DERIVED, inputs=(d[0] + "src",)))
    for src in ("tsrc", "rsrc", "ssrc"):
        g.add(Node(src, NodeKind.SOURCE))
    derived = dict.fromkeys(("ta", "tb", "ra", "rb", "sa", "sb"))
    graph = SimpleNamespace(nodes=g.nodes, derived=derived, derived_ids=derived.keys())
    table = InstanceTable(("ta", "tb", "tsrc"), [("rb", "ra", "rsrc"), ("sa", "sb", "ssrc")])
    assert row_blocks(graph, [table]) == {"sa": ("ssrc", "sa", "sb")}  # type: ignore[arg-type]
    assert g.order(row_blocks(graph, [table])) == _plain_order(g.nodes)  # type: ignore[arg-type]
    # nor one span: its rows' derived tensors are not one stretch in row order (a planted
    # span proof without that comparison goes red here, tried once by hand)
    spans: list[Any] = []
    assert row_blocks(graph, [table], spans) == {"sa": ("ssrc", "sa", "sb")}  # type: ignore[arg-type]
    assert spans == []
    g._order = None
    assert g.order({"sa": ("ssrc", "sa", "sb")}, spans) == _plain_order(g.nodes)


def test_a_run_replayed_by_columns_is_two_spans_and_the_plain_walk() -> None:
    """The scaling stack's stamped rows (one run, replayed by columns) give no block but two
    spans (their derived tensors, then their sources and ops); the order over them is the
    plain walk's, node for node."""
    graph = _compiled(scaling_model(6), [scaling_spec()])
    spans: list[Any] = []
    assert row_blocks(graph, closed_layers(graph), spans) == {}
    keys = list(graph.nodes)
    assert [(keys[start], stop - start, emit is None) for start, stop, emit in spans] == [
        ("layers.1.inv", 20, False), ("layers.1.scale", 20, True)]
    assert spans[0][2][:8] == ["layers.1.scale", "%4:div", "layers.1.inv", "layers.1.weight",
                               "%5:mul", "layers.1.prod", "layers.1.strides",
                               "layers.1.scale_alias"]
    g = Graph()
    g.nodes, g.version = graph.nodes, 1
    assert g.order({}, spans) == graph.ordered() == _plain_order(graph.nodes)


def _spanned() -> tuple[Graph, list[Any]]:
    """``t`` (a template) and ``r1``, ``r2`` (its rows, two spans), and ``x`` inserted after
    them, which reads ``r2_src``: the spans' claim that nothing else reaches them is false."""
    g = Graph()
    for d in ("t", "r1", "r2"):
        g.add(Node(d, NodeKind.DERIVED, inputs=(d + "_src",)))
    for name in ("t_src", "r1_src", "r2_src"):
        g.add(Node(name, NodeKind.SOURCE))
    g.add(Node("x", NodeKind.DERIVED, inputs=("r2_src",)))
    return g, [(1, 3, ["r1_src", "r1", "r2_src", "r2"]), (4, 6, None)]


def test_spans_a_walk_reaches_give_the_plain_walk() -> None:
    """Canary (the order's own check, a longer order than the graph): where a node outside
    the spans reads a node of one, the order is the walk without spans. Planted once by hand
    (the length check removed): ``r2_src`` is emitted twice and this goes red."""
    g, spans = _spanned()
    assert g.order(None, spans) == _plain_order(g.nodes)
    assert g.order(None, spans).count("r2_src") == 1


def test_a_cycle_through_a_span_is_still_found() -> None:
    """Canary (a span is emitted, not walked, but a walk from outside still walks into it):
    ``x`` reads ``r2``, whose source reads ``x``. Planted once by hand (the spans' nodes
    taken as emitted before the walks, as blocks are): the cycle is missed and this goes
    red."""
    g, spans = _spanned()
    g.nodes["r2_src"] = Node("r2_src", NodeKind.OP, "neg", inputs=("x",))
    g.nodes["x"] = Node("x", NodeKind.DERIVED, inputs=("r2",))
    with pytest.raises(ValueError, match="cycle through"):
        g.order(None, spans)
    with pytest.raises(ValueError, match="cycle through"):
        _plain_order(g.nodes)


def test_spans_that_overlap_give_the_plain_walk() -> None:
    g, spans = _spanned()
    g.nodes.pop("x")
    assert g.order(None, [*spans, (2, 5, None)]) == _plain_order(g.nodes)


def _cyclic_spec() -> Spec:
    """Two derived tensors of a layer reading each other (a cycle in every layer)."""
    return Spec(name="cyclic", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="a", kind="attribute", formula="b * 2.0"),
                         DerivedTensor(name="b", kind="attribute", formula="a + scale")])


def test_a_stamped_cyclic_spec_gets_the_issues_it_gets_unstamped() -> None:
    """Every layer's cycle is reported, stamped or not, with the same messages."""
    from derivgraph.compiler.bind import match_specs
    from derivgraph.compiler.build import build_graph

    found = []
    for stamped in (True, False):
        model = scaling_model(6)
        with stamping(stamped):
            graph = build_graph(model, match_specs(model, [_cyclic_spec()]))
        found.append(sorted((i.rule, i.message, i.node) for i in graph.issues))
    assert found[0] == found[1]
    assert len(found[0]) == 6 and all("cycle: layers." in m for _, m, _ in found[0])


def test_inference_cuts_the_rows_out_of_the_order_where_its_spans_emitted_them() -> None:
    """``infer``'s order without the closed rows (:meth:`DerivedGraph.unspanned`) is the order
    filtered by every node of their rows, and none where the spans were made of other tables.
    Canary: planted once by hand, span positions recorded one later make this go red."""
    from derivgraph.compiler.layers import layer_nodes, order_without_rows

    graph = _compiled(scaling_model(6), [scaling_spec()])
    _unspanned = type(graph).unspanned
    tables = closed_layers(graph)
    held = layer_nodes(tables)
    assert graph.ir.spanned() and graph.span_cache == (graph.ir.version, tables)
    rest = _unspanned(graph, tables)
    assert rest == [n for n in graph.ordered() if n not in held]
    assert len(rest) == len(graph.nodes) - 5 * 8
    assert _unspanned(graph, list(tables)) == rest  # the same tables in another list
    assert _unspanned(graph, [InstanceTable(tables[0].template, tables[0].rows)]) is None
    assert order_without_rows(graph, tables) == rest  # the one rule both phases take
    other = [InstanceTable(tables[0].template, tables[0].rows)]
    assert order_without_rows(graph, other) == \
        [n for n in graph.ordered() if n not in layer_nodes(other)]  # filtered, not cut
    assert order_without_rows(graph, []) == graph.ordered()
    graph.span_cache = (graph.ir.version, [tables[0].subset([True] * 4 + [False])])
    assert _unspanned(graph, graph.span_cache[1]) is None  # fewer rows than the spans hold
