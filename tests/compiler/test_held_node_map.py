"""Held nodes by column (:class:`~derivgraph.compiler.ir.Nodes`): a column-replayed run's source
and op nodes and a run's derived tensors' graph nodes are kept in ``Graph.nodes`` as their ids
and columns, each row's :class:`~derivgraph.compiler.ir.HeldNode` made on its first read and
then kept (one node per key). Every reader gets what the eager dict gives: each key's node (its
fields, once made), ``get``, ``in``, ``len``, the keys in order, ``items``/``values``, ``keys()``'s
``isdisjoint`` (``is_fresh``), equality, a copy and a pickle; every writer (a set, a delete,
``update``, ``setdefault``, ``pop``) leaves what it leaves there. The stamped scaling compile
and its refills make no held row's node. Canaries (planted once each, see the helper's NOTES):
a held id's row read as its column (``at % k`` and ``at // k`` swapped); the held runs iterated
after the own keys; a held node made anew on every read; the run's position index off by one;
``keys().isdisjoint`` blind to held runs."""

from __future__ import annotations

import copy
import pickle
from itertools import chain
from typing import Any

import pytest

from derivgraph.compiler.ir import Graph, HeldColumn, HeldLeaves, HeldNode, Node, NodeKind, Nodes
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_held_users import _plan  # the held / eager compiles

_OP, _DERIVED, _SOURCE = NodeKind.OP, NodeKind.DERIVED, NodeKind.SOURCE


def _graphs(monkeypatch: pytest.MonkeyPatch) -> tuple[Graph, Graph]:
    held, eager = _plan(True, monkeypatch).graph.ir, _plan(False, monkeypatch).graph.ir
    assert held.nodes._held and not eager.nodes._held and not held.nodes._made
    return held, eager


def _state(node: Node) -> tuple[Any, ...]:
    """The node's fields, made (every field read), and its class."""
    fields = (node.id, node.kind, node.op, node.args, node.kwargs, node.inputs, node.shape,
              node.stride, node.dtype, node.device)
    return type(node), fields


def _states(items: Any) -> list[Any]:
    return [(node_id, _state(node)) for node_id, node in items]


def test_every_reader_sees_the_eager_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _graphs(monkeypatch)
    nodes, want = held.nodes, eager.nodes
    ids = list(want)
    assert len(nodes) == len(want) and bool(nodes)
    assert list(nodes) == ids and list(nodes.keys()) == ids  # the eager order
    assert all(node_id in nodes for node_id in ids) and "no.such" not in nodes
    assert nodes.get("no.such") is None and nodes.get("no.such", 3) == 3
    with pytest.raises(KeyError):
        nodes["no.such"]  # noqa: B018
    # a held row's node: kind and id read without making it, one node per key
    first = {node_id: nodes[node_id] for node_id in reversed(ids)}  # read last row first
    assert all(nodes[n] is first[n] and nodes.get(n) is first[n] for n in ids)
    assert [(n, node.id, node.kind) for n, node in first.items()] == \
        [(n, want[n].id, want[n].kind) for n in reversed(ids)]
    assert sum(isinstance(node, HeldNode) for node in first.values()) > len(ids) // 2
    assert [node_id for node_id, _ in nodes.items()] == ids
    assert _states(nodes.items()) == _states(want.items())  # every field as made eagerly
    assert list(map(id, nodes.values())) == [id(first[n]) for n in ids]
    assert all(type(node) is Node for node in nodes.values())
    copied = nodes.copy()
    assert type(copied) is dict and list(copied) == ids and copied == nodes and nodes == copied
    assert not nodes != copied and nodes != {}
    assert repr(nodes) == repr(copied)


def test_keys_isdisjoint_sees_the_held_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _plan(True, monkeypatch).graph
    held, eager = graph.ir, _plan(False, monkeypatch).graph.ir
    for node_id in eager.nodes:
        assert not held.nodes.keys().isdisjoint({node_id})
        assert not held.nodes.keys().isdisjoint([node_id, "no.such"])
        assert not graph.is_fresh([node_id])
    assert held.nodes.keys().isdisjoint({"no.such"}) and graph.is_fresh(["no.such"])
    assert held.nodes._made == {}  # none made by the sweeps


def test_column_reads_no_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """``column``: a held row's column without making its node; None once it is made
    (its class is then ``Node``), its column still with ``made``."""
    held, eager = _graphs(monkeypatch)
    leaf = next(n for n in eager.nodes if eager.nodes[n].kind is _DERIVED
                and n.startswith("layers.9."))
    column = held.nodes.column(leaf)
    assert type(column) is HeldLeaves and leaf in column.ids and not held.nodes._made
    node = held.nodes[leaf]
    assert type(node).column is column and held.nodes.column(leaf) is column  # not made
    assert node.inputs == eager.nodes[leaf].inputs  # made now
    assert held.nodes.column(leaf) is None and held.nodes.column(leaf, made=True) is column
    assert held.nodes.column("no.such") is None and held.nodes.column("no.such", True) is None


def test_writers_leave_what_they_leave_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _graphs(monkeypatch)
    row = [n for n in eager.nodes if n.startswith("layers.6.")]
    for graph in (held, eager):
        graph.nodes["fresh.a"] = Node("fresh.a", _SOURCE)  # a new key: after the runs
    assert held.nodes._held and list(held.nodes) == list(eager.nodes)
    assert held.nodes.setdefault("fresh.a", None).id == "fresh.a"
    for graph in (held, eager):
        graph.nodes[row[0]] = Node(row[0], _SOURCE)  # a held key set: made first, in place
    assert not held.nodes._held and _states(held.nodes.items()) == _states(eager.nodes.items())
    for graph in (held, eager):
        del graph.nodes[row[1]]
        graph.nodes.update({"fresh.b": Node("fresh.b", _OP)})
        assert graph.nodes.pop(row[2]).id == row[2]
    assert _states(held.nodes.items()) == _states(eager.nodes.items())


@pytest.mark.parametrize("writer", ["del", "update", "pop", "popitem"])
def test_each_writer_settles_first(writer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _graphs(monkeypatch)
    victim = next(n for n in eager.nodes if n.startswith("layers.8."))
    for graph in (held, eager):
        nodes = graph.nodes
        if writer == "del":
            del nodes[victim]
        elif writer == "update":
            nodes.update([(victim, Node(victim, _SOURCE))])
        elif writer == "pop":
            nodes.pop(victim)
        else:
            nodes.popitem()
    assert not held.nodes._held
    assert _states(held.nodes.items()) == _states(eager.nodes.items())


def test_nodes_pickle_and_copy_as_the_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _graphs(monkeypatch)
    for make in (lambda n: pickle.loads(pickle.dumps(n)), copy.deepcopy, copy.copy):
        got = make(held.nodes)
        assert type(got) is Nodes and not got._held
        assert _states(got.items()) == _states(eager.nodes.items())


def test_held_graph_behaves_as_the_eager_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph's readers over the held nodes: order, networkx, a node's users."""
    held, eager = _graphs(monkeypatch)
    assert held.order() == eager.order()
    assert sorted(held.nx().edges) == sorted(eager.nx().edges)
    assert list(held.users.items()) == list(eager.users.items())


def test_compile_makes_no_held_node() -> None:
    """The stamped compile and its refills make no held row's node and build no run's
    index (its reads are few, near the runs' starts): the dict's own keys are the
    template's nodes and the layers' shared constant."""
    layers = 50
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    plan.refill()
    plan.refill(verify=True)
    nodes = plan.graph.ir.nodes
    assert nodes._held and not nodes._made
    assert all(run._index is None for run in nodes._held)
    assert dict.__len__(nodes) == len(nodes) // layers + 1  # the template's and a constant


def _fields(row: int) -> tuple[Any, ...]:
    return (_OP, "mul", (), {}, (f"x{row}",), (), (), None, None)


def _run(rows: int, width: int) -> tuple[Nodes, list[HeldColumn], list[str]]:
    columns = [HeldColumn([f"%{r}:c{k}" for r in range(rows)], _fields) for k in range(width)]
    for column in columns:
        column.hold(_OP, "mul")
    ids = list(chain.from_iterable(zip(*[column.ids for column in columns])))
    nodes = Nodes()
    nodes["a"] = Node("a", _SOURCE)
    nodes.hold(ids, columns)
    nodes["b"] = Node("b", _SOURCE)
    return nodes, columns, ids


def test_a_run_maps_each_id_to_its_columns_row() -> None:
    """Each id of a run a row at a time over three columns is its column's row, read from
    the last (the scans then the index: every position right either way)."""
    nodes, columns, ids = _run(40, 3)
    assert list(nodes) == ["a", *ids, "b"] and len(nodes) == len(ids) + 2
    for at in reversed(range(len(ids))):
        node = nodes[ids[at]]
        assert node.id == ids[at] and type(node).column is columns[at % 3]
        assert nodes.column(ids[at]) is columns[at % 3]
    assert nodes._held[0]._index is not None  # the scans read more than the run: indexed
    assert [node.inputs for node in nodes.values()][1:-1] == \
        [(f"x{at // 3}",) for at in range(len(ids))]
    assert all(column.made == set(range(40)) for column in columns)


def test_a_run_is_its_columns_ids_a_row_at_a_time() -> None:
    columns = [HeldColumn(["p", "q"], _fields), HeldColumn(["r", "s"], _fields)]
    for ids in (["p", "q", "r", "s"], ["p", "r", "q"], ["r", "p", "q", "s"]):
        with pytest.raises(ValueError, match="a row at a time"):
            Nodes().hold(ids, columns)
    Nodes().hold(["p", "r", "q", "s"], columns)
