"""A column-replayed run's CSE keys are made when the table is next read
(``DerivedGraph.add_made(..., keys=...)``, ``_settle_cse``): every read of the table, and
every ``op_keyed`` lookup, sees them, in the order the row replays would have added them; a
build whose run is the last CSE user never makes them. Canary: planted once by hand,
``op_keyed`` looking up the table without the due keys makes
``test_a_due_key_is_a_hit_for_the_next_op_call`` go red."""

from __future__ import annotations

from typing import Any

from torch import nn

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.graph import DerivedGraph, NodeRef, freeze
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _key(name: str, args: tuple[Any, ...]) -> Any:
    return (name, freeze(args), freeze({}))


def _run(graph: DerivedGraph, op_ids: list[str], args: list[tuple[Any, ...]]) -> None:
    """A made run of op nodes whose keys are due."""
    nodes = [Node(i, NodeKind.OP, "mul", a, {}, tuple(r.id for r in a)) for i, a in
             zip(op_ids, args, strict=True)]
    graph.add_made(op_ids, nodes, [[] for _ in op_ids], [], len(op_ids), {"mul"},
                   lambda: [(_key("mul", a), i) for i, a in zip(op_ids, args, strict=True)])


def test_a_due_key_is_a_hit_for_the_next_op_call() -> None:
    graph = DerivedGraph(nn.Module())
    args = (NodeRef("a"), NodeRef("b"))
    _run(graph, ["%1:mul"], [args])
    assert graph.op_count() == 1 and graph._cse_due
    hit = graph.op_keyed("mul", args, {}, _key("mul", args), ["a", "b"])
    assert hit == "%1:mul" and graph.cse_hits == 1 and graph.op_count() == 1
    assert not graph._cse_due


def test_due_keys_are_read_in_the_order_they_were_made() -> None:
    graph = DerivedGraph(nn.Module())
    first = (NodeRef("a"), NodeRef("b"))
    graph.op_keyed("mul", (NodeRef("x"), 2), {}, _key("mul", (NodeRef("x"), 2)), ["x"])
    _run(graph, ["%2:mul", "%3:mul"], [first, (NodeRef("c"), NodeRef("d"))])
    _run(graph, ["%4:mul"], [(NodeRef("e"), NodeRef("f"))])
    assert graph.op_count() == 4
    new = graph.op_keyed("mul", (NodeRef("g"), 3), {}, _key("mul", (NodeRef("g"), 3)), ["g"])
    assert new == "%5:mul"
    assert list(graph._cse.values()) == ["%1:mul", "%2:mul", "%3:mul", "%4:mul", "%5:mul"]


def test_a_stamped_build_leaves_its_runs_keys_due_until_read() -> None:
    model = scaling_model(12)
    graph = build.build_graph(model, match_specs(model, [scaling_spec()]))
    assert graph.stamped == 11 and graph._cse_due  # the run's keys: not made
    table = graph._cse  # read: made, each op node's key
    assert not graph._cse_due
    ops = [n for n in graph.ir.nodes.values() if n.kind is NodeKind.OP]
    assert len(table) == len(ops)
    assert all(table[(n.op, freeze(n.args), freeze(n.kwargs))] == n.id for n in ops)
