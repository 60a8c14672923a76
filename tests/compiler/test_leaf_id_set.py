"""``Graph.add_leaves`` given the set of its ids (``id_set``, as ``build._derived_columns``
made it) decides freshness on that set: where no id has users yet the held columns hold
their users lists, where one has (a node read it before it was added) every list is kept as
the eager adds leave it; either way the graph equals the one made without the set.
Canary (see the helper's NOTES): the set given not read (an empty set in its place)."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.compiler.ir import Graph, HeldLeaves, Node, NodeKind

_DERIVED = NodeKind.DERIVED
_IDS = [f"layers.{i}.{name}" for i in range(4) for name in ("inv", "prod")]


def _graph(taken: bool, held: bool, given: bool) -> Graph:
    """A graph with an op ``x`` (reading ``layers.2.prod`` where ``taken``), then the
    leaves ``_IDS`` added by two columns (``held``) or eagerly, with their id set
    (``given``) or without."""
    graph = Graph()
    graph.add(Node("c", NodeKind.SOURCE))
    graph.add(Node("x", NodeKind.OP, "neg", inputs=("layers.2.prod" if taken else "c",)))
    id_set = set(_IDS) if given else None
    if held:
        columns = [HeldLeaves(_IDS[k::2], _DERIVED) for k in range(2)]
        nodes = [node for row in zip(*[c.nodes(_DERIVED) for c in columns]) for node in row]
        graph.add_leaves(nodes, list(_IDS), columns, id_set)
    else:
        graph.add_leaves([Node(i, _DERIVED) for i in _IDS], list(_IDS), (), id_set)
    return graph


def _state(graph: Graph) -> Any:
    return (list(graph.users.items()), [(i, n.kind, n.inputs) for i, n in graph.nodes.items()],
            graph.version)


@pytest.mark.parametrize("taken", [False, True], ids=["fresh", "read-before"])
@pytest.mark.parametrize("held", [False, True], ids=["eager", "held"])
def test_the_given_set_decides_as_the_ids_do(taken: bool, held: bool) -> None:
    got = _graph(taken, held, given=True)
    assert _state(got) == _state(_graph(taken, held, given=False))
    assert _state(got) == _state(_graph(taken, False, given=False))
    assert bool(got.users._held) is (held and not taken)
    if taken:
        assert got.users["layers.2.prod"] == ["x"]
