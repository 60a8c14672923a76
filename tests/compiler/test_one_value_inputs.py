"""``Graph.set_input_each`` where a stretch of held derived leaves all take one value (a node
every row reads, e.g. a template constant): the value's users list takes the ids in one extend
(or is made with them), which is what the per-pair appends leave: the same users (order and
key order included), inputs and version as an eager graph given the pairs one by one. And
``DerivedGraph.place_input_each`` sets the inputs by one sweep (one value per node).
Canaries (see the helper's NOTES): the ids extended in reverse; a held value's list not looked
up (a new list shadows it)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.ir import Graph, HeldColumn, HeldLeaves, Node, NodeKind, row_users
from derivgraph.compiler.replay import _source_fields

_DERIVED, _SOURCE = NodeKind.DERIVED, NodeKind.SOURCE
_IDS = [f"layers.{i}.strides" for i in range(6)]


def _graph(held: bool, value: str) -> Graph:
    """A graph with a source column ``s0..s2`` (held or eager) whose users are held,
    a node ``c`` read by ``x``, and the derived leaves ``_IDS`` (held or eager)."""
    graph = Graph()
    graph.add(Node("c", _SOURCE))
    graph.add(Node("x", NodeKind.OP, "neg", inputs=("c",)))
    src = [f"s{i}" for i in range(3)]
    if held:
        column = HeldColumn(src, partial(_source_fields, (8,), (1,), None, None))
        column.users = partial(row_users, [["x", "x", "x"]])
        graph.add_fresh(src, column.nodes(_SOURCE), [column])
    else:
        graph.add_fresh(src, [Node(s, _SOURCE, shape=(8,), stride=(1,)) for s in src],
                        [["x"] for _ in src])
    if held:
        leaves = HeldLeaves(_IDS, _DERIVED)
        graph.add_leaves(leaves.nodes(_DERIVED), _IDS, [leaves])
    else:
        graph.add_leaves([Node(i, _DERIVED) for i in _IDS], _IDS)
    return graph


def _state(graph: Graph) -> Any:
    return (list(graph.users.items()), [graph.nodes[i].inputs for i in graph.nodes],
            graph.version)


@pytest.mark.parametrize("value", ["c", "new", "s1", "x"])
def test_one_value_as_the_pairs(value: str) -> None:
    held, eager = _graph(True, value), _graph(False, value)
    ids = _IDS[1:5]
    held.set_input_each(ids, [value] * len(ids))
    leaves = type(held.nodes[ids[0]]).column
    assert leaves.values == [None, *[value] * 4, None] and not leaves.made  # as a column
    for node_id in ids:
        eager.set_input_each([node_id], [value])
    assert _state(held) == _state(eager)
    assert held.users[value] == ([] if value in ("x", "new") else ["x"]) + ids


def test_two_values_as_the_pairs() -> None:
    held, eager = _graph(True, "c"), _graph(False, "c")
    values = ["c", "s1", "c", "new"]
    held.set_input_each(_IDS[:4], values)
    for node_id, value in zip(_IDS[:4], values, strict=True):
        eager.set_input_each([node_id], [value])
    assert _state(held) == _state(eager)


def test_place_input_each_one_value_per_node() -> None:
    graph = DerivedGraph(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one value per node"):
        graph.place_input_each([], ["c"])
