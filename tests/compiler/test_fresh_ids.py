"""``DerivedGraph.is_fresh`` (the column replay's precondition: every node a run names is new)
sweeps the users' keys only: that holds because every node's id has a users list and every
derived tensor's id is a node's. These tests keep both facts and the answer on built graphs.
Canary: planted once by hand, ``Graph.add_leaves`` not giving its nodes users lists makes
``test_every_node_has_users_and_every_derived_tensor_is_a_node`` go red."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _graph(stamp: bool) -> Any:
    model = scaling_model(6)
    with stamping(stamp):
        graph = build.build_graph(model, match_specs(model, [scaling_spec()]))
    assert graph.stamped == (5 if stamp else 0)
    return graph


@pytest.mark.parametrize("stamp", [True, False], ids=["stamped", "plain"])
def test_every_node_has_users_and_every_derived_tensor_is_a_node(stamp: bool) -> None:
    graph = _graph(stamp)
    assert graph.ir.nodes.keys() <= graph.ir.users.keys()
    assert graph.derived.keys() <= graph.ir.nodes.keys()


def test_is_fresh_is_no_node_no_derived_tensor_no_users_none_twice() -> None:
    graph = _graph(True)
    derived = next(iter(graph.derived))
    op = next(n for n in graph.ir.nodes if n.startswith("%"))
    source = next(n for n in graph.ir.nodes if n.endswith(".scale"))
    assert graph.is_fresh(["new.a", "new.b"])
    assert graph.is_fresh([])
    assert not graph.is_fresh(["new.a", "new.a"])
    for taken in (derived, op, source):
        assert not graph.is_fresh(["new.a", taken])
    graph.ir.users["only.users"] = []  # a node's users named before the node is made
    assert not graph.is_fresh(["only.users"])
