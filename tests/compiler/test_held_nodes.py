"""Held nodes (:class:`~derivgraph.compiler.ir.HeldColumn`, ``HeldLeaves``): a column-replayed
run's source and op nodes and a run's derived tensors are held as columns and each made on first
use, into the :class:`~derivgraph.compiler.ir.Node` the eager build makes (every field, in
order, class ``Node``). A held leaf column takes its values as a column only for a stretch of
rows none of which was made or given a value; else each node is set as before. The compile of
the stamped scaling model makes none of its stamped rows' nodes (no reader on the compile path
sweeps them). Canaries (planted once each, see the helper's NOTES): a leaf column's stretch
blind to made rows; ``sources()`` reading a field other than ``kind``; interleaved lanes all
given the first lane's values."""

from __future__ import annotations

import copy
import pickle
from itertools import chain
from typing import Any

from derivgraph.compiler.graph import NodeRef
from derivgraph.compiler.ir import Graph, HeldColumn, HeldLeaves, HeldNode, Node, NodeKind
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_OP, _DERIVED = NodeKind.OP, NodeKind.DERIVED


def _fields(row: int) -> tuple[Any, ...]:
    return (_OP, "mul", (NodeRef(f"x{row}"), 2.0), {"k": row}, (f"x{row}",), (), (), None, None)


def _eager(row: int) -> Node:
    return Node(f"%{row}:mul", *_fields(row))


def _state(node: Node) -> tuple[Any, ...]:
    """The node's class and fields, in order, once a field is read (a held node made)."""
    assert node.inputs is not None
    return type(node), list(node.__dict__.items())


def test_held_node_made_on_first_use_equals_eager() -> None:
    ids = [f"%{r}:mul" for r in range(3)]
    held = HeldColumn(ids, _fields).nodes(_OP)
    assert all(isinstance(n, HeldNode) for n in held)
    assert [(n.id, n.kind) for n in held] == [(i, _OP) for i in ids]  # not made by these
    assert all(isinstance(n, HeldNode) for n in held)
    assert held[1].inputs == ("x1",)
    assert _state(held[1]) == _state(_eager(1))
    assert isinstance(held[0], HeldNode) and isinstance(held[2], HeldNode)
    held[2].inputs = ("z",)  # a write makes it first
    want = _eager(2)
    want.inputs = ("z",)
    assert _state(held[2]) == _state(want)
    assert repr(held[0]) == repr(_eager(0)) and type(held[0]) is Node


def test_held_node_copies_and_pickles_as_a_node() -> None:
    ids = ["%0:mul", "%1:mul"]
    for make in (pickle.dumps, copy.copy):
        held = HeldColumn(ids, _fields).nodes(_OP)
        got = make(held[1])
        got = pickle.loads(got) if isinstance(got, bytes) else got
        assert _state(got) == _state(_eager(1)) and _state(held[1]) == _state(_eager(1))


def _leaf_graphs(rows: int, width: int) -> tuple[Graph, Graph, list[list[str]]]:
    """The same derived leaves added held by column and eagerly; the columns' ids."""
    columns = [[f"m.{r}.d{k}" for r in range(rows)] for k in range(width)]
    ids = list(chain.from_iterable(zip(*columns)))
    held, eager = Graph(), Graph()
    for graph in (held, eager):
        graph.add(Node("c", NodeKind.SOURCE))
        graph.add(Node("s", NodeKind.SOURCE))
    held.add_leaves(list(chain.from_iterable(
        zip(*[HeldLeaves(c, _DERIVED).nodes(_DERIVED) for c in columns]))), ids)
    eager.add_leaves([Node(i, _DERIVED) for i in ids], ids)
    return held, eager, columns


def _graph_state(graph: Graph) -> list[Any]:
    return [[_state(n) for n in graph.nodes.values()], list(graph.users.items()), graph.version]


def test_held_leaves_take_values_by_column() -> None:
    held, eager, columns = _leaf_graphs(4, 2)
    for graph in (held, eager):
        assert graph.without_inputs(columns[0]) and graph.without_inputs(columns[1][1:])
        graph.set_fresh_inputs(columns[0][1:], ["s"] * 3)
        graph.set_input_each(columns[1], ["c"] * 4)
        graph.set_input_each(columns[0][:1], ["c"])
    assert sum(isinstance(n, HeldNode) for n in held.nodes.values()) == 8  # none made
    for graph in (held, eager):
        assert not graph.without_inputs(columns[0])  # a sweep: makes the first node read
    assert _graph_state(held) == _graph_state(eager)
    assert all(type(n) is Node for n in held.nodes.values())  # the state read made each


def test_held_leaves_made_rows_set_one_by_one() -> None:
    """A stretch with a made row (or a row already given its value) is not taken as a
    column: each node is set as the eager graph's (canary: a stretch blind to made rows
    gives the made row's node no input)."""
    held, eager, columns = _leaf_graphs(3, 1)
    for graph in (held, eager):
        assert graph.nodes[columns[0][1]].inputs == ()  # made here (held)
        graph.set_input_each(columns[0], ["s", "c", "s"])
        graph.set_input_each(columns[0][2:], ["c"])  # a row that has a value: moved
    assert _graph_state(held) == _graph_state(eager)
    assert held.nodes[columns[0][1]].inputs == ("c",)


def test_compile_makes_no_stamped_row_node() -> None:
    """The stamped scaling compile leaves every stamped row's source, op and derived node
    held (the template's are made, read by name): no reader on the compile path sweeps
    them; the dump's read of every node then gives what the eager build gives (checked by
    ``benchmarks/results/compile38b/dump_compare.sh``)."""
    layers = 50
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    nodes = plan.graph.ir.nodes
    held = [n for n in nodes.values() if isinstance(n, HeldNode)]
    per_row = len(nodes) // layers
    assert len(held) == (layers - 1) * per_row
    assert {n.kind for n in held} == {NodeKind.SOURCE, NodeKind.OP, NodeKind.DERIVED}


def test_held_leaves_take_interleaved_columns() -> None:
    """Ids a row at a time over two columns (lanes) take their values by column, the users
    lists appended in the ids' order (canary: every lane given the first lane's values)."""
    held, eager, columns = _leaf_graphs(4, 3)
    ids = list(chain.from_iterable(zip(columns[0][1:], columns[2][1:])))
    values = list(chain.from_iterable(zip(["s"] * 3, ["c", "s", "c"])))
    for graph in (held, eager):
        assert graph.without_inputs(ids)
        graph.set_input_each(ids, values)
        graph.set_input_each(columns[1], ["c"] * 4)
    assert sum(isinstance(n, HeldNode) for n in held.nodes.values()) == 12  # none made
    assert _graph_state(held) == _graph_state(eager)
