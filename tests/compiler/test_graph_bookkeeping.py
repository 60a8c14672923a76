"""The graph's bookkeeping per node: CSE by one key lookup, users per input.

:meth:`DerivedGraph.op_keyed` stores a new op's id under its key with one ``setdefault`` and
tells a hit by the stored id not being the one it offered; :meth:`Graph.add` and
:meth:`Graph.set_inputs` keep each node's users (an input named before its node exists gets
its list then). Asserted as values; canary: an ``op_keyed`` that takes every offered id as
new makes a second call with the same key a second node.
"""

from __future__ import annotations

import pytest
from torch import nn

from derivgraph.compiler.graph import DerivedGraph, NodeRef
from derivgraph.compiler.ir import Graph, Node, NodeKind


def _ops(graph: DerivedGraph) -> list[str]:
    a, b = NodeRef("a"), NodeRef("b")
    return [graph.op_keyed("mul", (a, b), {}, ("mul", "a", "b"), ["a", "b"]),
            graph.op_keyed("mul", (a, b), {}, ("mul", "a", "b"), ["a", "b"]),
            graph.op_keyed("add", (a, a), {}, ("add", "a", "a"), ["a", "a"]),
            graph.op_keyed("mul", (a, b), {}, ("mul", "a", "b"), ["a", "b"])]


def test_a_key_made_once_is_a_hit_after() -> None:
    graph = DerivedGraph(nn.Module())
    assert _ops(graph) == ["%1:mul", "%1:mul", "%2:add", "%1:mul"]
    assert (graph.cse_hits, graph.op_count(), graph.op_names) == (2, 2, {"mul", "add"})
    assert list(graph.nodes) == ["%1:mul", "%2:add"]
    assert graph.nodes["%2:add"].inputs == ("a",)  # each input once
    assert graph.ir.users == {"%1:mul": [], "a": ["%1:mul", "%2:add"], "b": ["%1:mul"],
                              "%2:add": []}


def test_users_follow_add_and_set_inputs() -> None:
    g = Graph()
    g.add(Node("d", NodeKind.DERIVED))
    g.set_inputs("d", ("x",))  # x has no node yet: its users list is made here
    g.add(Node("x", NodeKind.SOURCE))
    g.add(Node("y", NodeKind.SOURCE))
    g.add(Node("%1:add", NodeKind.OP, op="add", inputs=("x", "y")))
    g.set_inputs("d", ("%1:add",))
    assert g.users == {"d": [], "x": ["%1:add"], "y": ["%1:add"], "%1:add": ["d"]}
    assert g.version == 6


def test_canary_every_offered_id_taken_as_new_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Planted(dict):
        def setdefault(self, key, default=None):  # noqa: ANN001, ANN202
            self[key] = default
            return default

    graph = DerivedGraph(nn.Module())
    monkeypatch.setattr(graph, "_cse", Planted())
    assert _ops(graph) == ["%1:mul", "%2:mul", "%3:add", "%4:mul"]  # the planted bug shows


def _inputs_set(each: bool) -> Graph:
    """Three derived nodes given inputs (``d`` had one already), by :meth:`Graph.set_input_each`
    or by :meth:`Graph.set_inputs` one at a time."""
    g = Graph()
    for node_id in ("d", "e", "f"):
        g.add(Node(node_id, NodeKind.DERIVED))
    g.add(Node("x", NodeKind.SOURCE))
    g.add(Node("y", NodeKind.SOURCE))
    g.set_inputs("d", ("x",))
    ids, values = ["e", "d", "f"], ["x", "y", "z"]  # z: no node yet
    if each:
        g.set_input_each(ids, values)
    else:
        for node_id, value_id in zip(ids, values, strict=True):
            g.set_inputs(node_id, (value_id,))
    return g


def _state(g: Graph) -> list[object]:
    return [[(n.id, n.inputs) for n in g.nodes.values()], list(g.users.items()), g.version]


def test_set_input_each_is_set_inputs_in_turn() -> None:
    assert _state(_inputs_set(True)) == _state(_inputs_set(False))
    assert _inputs_set(True).users["x"] == ["e"]  # d moved from x to y


def test_canary_set_input_each_taking_every_node_as_fresh_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def planted(self: Graph, ids: list[str], values: list[str]) -> None:
        for node_id, value_id in zip(ids, values, strict=True):
            self.nodes[node_id].inputs = (value_id,)
            self.users.setdefault(value_id, []).append(node_id)
            self.version += 1

    monkeypatch.setattr(Graph, "set_input_each", planted)
    assert _state(_inputs_set(True)) != _state(_inputs_set(False))  # the planted bug shows
