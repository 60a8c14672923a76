"""Held users lists (:class:`~derivgraph.compiler.ir.Users`): a column-replayed run's nodes and
its derived tensors' graph nodes keep their users lists as their columns' rows, each list made
on its first read or write. Every reader of ``Graph.users`` gets what the eager dict gives: each
key's list, ``get``, ``in``, ``len``, the keys in order, ``items``, equality, ``keys()``'s
``isdisjoint`` (``is_fresh``), a copy and a pickle; every writer (``add``, ``set_inputs``,
``set_input_each``, a set, ``setdefault``, ``update``, a delete) leaves what it leaves there.
The stamped scaling compile and its refills make none of the held lists. Canaries (planted once
each, see the helper's NOTES): a held row's list without its derived tensors; a list made anew
on every read (a writer's append lost); the compile reading every node's users; ``isdisjoint``
blind to held runs; held runs iterated after the own keys; a made node's list not found;
``add`` not looking up a held input."""

from __future__ import annotations

import copy
import pickle
from itertools import chain
from typing import Any

import pytest

from derivgraph.compiler import stamp
from derivgraph.compiler.ir import Graph, Node, NodeKind, Users
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_LAYERS = 12


def _plan(held: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The stamped scaling compile, runs replayed by columns (``held``) or row by row and
    the derived tensors' nodes added without columns (every users list built eagerly)."""
    add_leaves = Graph.add_leaves
    with monkeypatch.context() as patch:
        if not held:
            patch.setattr(stamp.Stamper, "_replay_run", lambda self, *args: False)
            patch.setattr(Graph, "add_leaves",
                          lambda self, nodes, ids=None, columns=(), id_set=None:
                          add_leaves(self, _made(nodes, columns), ids, (), id_set))
        return compile_plan(scaling_model(_LAYERS), [scaling_spec()])


def _made(nodes: list[Node] | None, columns: Any) -> list[Node]:
    """``add_leaves``' nodes, each column's rows' held nodes made where it holds them by
    column (``nodes`` None)."""
    if nodes is not None:
        return nodes
    return list(chain.from_iterable(zip(*[column.held_nodes() for column in columns])))


def _held_graph(monkeypatch: pytest.MonkeyPatch) -> tuple[Graph, Graph]:
    """The held compile's IR graph (with held runs) and the eager one's."""
    held, eager = _plan(True, monkeypatch).graph.ir, _plan(False, monkeypatch).graph.ir
    assert held.users._held and not eager.users._held
    assert type(eager.users) is Users and not held.users._made
    return held, eager


def test_every_reader_sees_the_eager_users(monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _held_graph(monkeypatch)
    ids = list(eager.nodes)
    users, want = held.users, dict(eager.users)
    assert len(users) == len(want)
    assert all(node_id in users for node_id in ids) and "no.such" not in users
    assert users.get("no.such") is None and users.get("no.such", []) == []
    assert [users.get(node_id) for node_id in ids] == [want[node_id] for node_id in ids]
    assert not users._made or len(users._made) <= len(ids)
    assert list(users) == list(want)  # the keys in the eager order
    assert list(users.keys()) == list(want) and list(users.values()) == list(want.values())
    assert list(users.items()) == list(want.items())
    assert users == want and want == users and not users != want
    assert users.copy() == want and type(users.copy()) is dict
    assert all(users[node_id] is users[node_id] for node_id in ids)  # one list per key
    for node_id in ids:
        assert not users.keys().isdisjoint({node_id})
    assert users.keys().isdisjoint(["no.such"]) and users.keys() >= eager.nodes.keys()


def test_held_lists_read_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A held row's list read by ``[]`` before anything else (no iteration first)."""
    held, eager = _held_graph(monkeypatch)
    for node_id in reversed(list(eager.nodes)):
        assert held.users[node_id] == eager.users[node_id]
        assert node_id in held.users


def test_writers_leave_what_they_leave_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _held_graph(monkeypatch)
    row = [n for n in eager.nodes if n.startswith("layers.5.")]
    op = next(n for n in eager.nodes if n.startswith("%") and n not in held.users._made
              and type(held.nodes[n]).__name__ == "HeldNode")
    derived = next(n for n in eager.nodes if eager.nodes[n].kind is NodeKind.DERIVED
                   and n.startswith("layers.7."))
    for graph in (held, eager):
        graph.add(Node("%x:add", NodeKind.OP, "add", inputs=(row[0], op)))  # held lists grow
        graph.set_inputs(derived, (op,))  # moved: off its value's list, onto op's
        graph.add(Node("%y:d", NodeKind.DERIVED))
        graph.set_input_each(["%y:d"], [op])
        graph.users.setdefault(row[-1], []).append("%z")
        graph.users.setdefault("fresh.key", []).append("%w")
    assert list(held.users.items()) == list(eager.users.items())
    assert held.version == eager.version
    for graph in (held, eager):
        graph.users[row[1]] = ["%set"]  # a held key set: every list made first, then set
    assert list(held.users.items()) == list(eager.users.items()) and not held.users._held
    for graph in (held, eager):
        del graph.users[row[2]]
        graph.users.update({"%u": []})
    assert list(held.users.items()) == list(eager.users.items())


def test_users_pickle_and_copy_as_the_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    held, eager = _held_graph(monkeypatch)
    for make in (lambda u: pickle.loads(pickle.dumps(u)), copy.deepcopy):
        got = make(held.users)
        assert type(got) is Users and list(got.items()) == list(eager.users.items())


def test_held_node_made_keeps_its_users(monkeypatch: pytest.MonkeyPatch) -> None:
    """A held node made by a field read still answers its users from its column."""
    held, eager = _held_graph(monkeypatch)
    op = next(n for n in eager.nodes if n.startswith("%")
              and type(held.nodes[n]).__name__ == "HeldNode" and eager.users[n])
    assert held.nodes[op].inputs == eager.nodes[op].inputs  # made now
    assert type(held.nodes[op]) is Node and op in held.users
    assert held.users[op] == eager.users[op] and held.users.get(op) == eager.users[op]


def test_compile_makes_no_held_users_list() -> None:
    """The stamped compile and its refills make no held row's users list (no reader on the
    compile or refill path sweeps them): only the template's lists are the dict's own."""
    plan = compile_plan(scaling_model(50), [scaling_spec()])
    plan.refill()
    plan.refill(verify=True)
    users = plan.graph.ir.users
    assert not users._made and users._held
    assert dict.__len__(users) < len(plan.graph.ir.nodes) // 40
