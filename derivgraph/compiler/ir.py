"""The typed IR: a closed vocabulary of node and tensor kinds, and the node graph.

In the spirit of ``torch.fx``: a :class:`Node` is a dataclass with an enum :class:`NodeKind`;
derived tensors carry a :class:`TensorKind` and bind into a :class:`Slot`. The enums are ``str``
enums, so spec YAML/JSON (which spell kinds as strings) compare and serialize unchanged, but no
module compares bare kind strings. :class:`Graph` keeps nodes in dicts with O(1) edge and version
bookkeeping and a linear-time topological order; networkx is only built on demand (``graph.g``)
for algorithms and pictures. A node may be *lazy* (:class:`Nodes`): its id inserted with what
it is made of, its ``Node`` made on first read (the derived tensors, a stamped row's nodes).
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from itertools import chain, filterfalse
from typing import Any

from derivgraph._enum import StrEnum

__all__ = ["Graph", "Node", "NodeKind", "Nodes", "depth_first"]


class NodeKind(StrEnum):
    """What a graph node is."""

    SOURCE = "source"    # a tensor the engine owns (a weight, a scale), read at its path
    OP = "op"            # a registered op over other nodes and Python constants (CSE-shared)
    DERIVED = "derived"  # a declared derived tensor; its one input is its value


@dataclass(eq=False)
class Node:
    """One IR node. ``inputs`` are the node ids it reads (for ops: every NodeRef in its args)."""

    id: str
    kind: NodeKind
    op: str | None = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    # sources: the tensor's layout when the plan was compiled
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    dtype: Any = None
    device: Any = None

    def as_attrs(self) -> dict[str, Any]:
        """The node as networkx node attributes."""
        attrs: dict[str, Any] = {"kind": self.kind}
        if self.kind is NodeKind.OP:
            attrs.update(op=self.op, args=self.args, kwargs=self.kwargs)
        elif self.kind is NodeKind.SOURCE:
            attrs.update(path=self.id, shape=self.shape, stride=self.stride, dtype=self.dtype,
                         device=self.device)
        return attrs


class Nodes(dict):  # type: ignore[type-arg]  # dict[str, Node], with lazy ids
    """Nodes by id in insertion order: the explicit :class:`Node` s (the dict itself, read at
    C speed) and *lazy* ids, recorded with what their node is made of (:meth:`add_lazy`: a
    tuple of the ``Node``'s fields, or another object :attr:`build` makes a node of kind
    :attr:`built_kind` from) and made on their first read (then held in the dict: one object
    per id).

    Every read sees both as one mapping: ``nodes[id]``, ``in``, :meth:`get`, ``len`` and the
    iteration (each lazy id at its insertion position among the explicit ones: a lazy id
    records how many explicit nodes were inserted before it, consecutive lazy ids form one
    span).
    """

    __slots__ = ("_made", "_spans", "build", "built_kind", "records")

    def __init__(self) -> None:
        super().__init__()
        #: lazy id -> what its node is made of (made or not)
        self.records: dict[str, Any] = {}
        self._spans: list[tuple[int, list[str]]] = []  # (explicit nodes before it, lazy ids)
        self._made = 0  # lazy ids made (held in the dict too)
        #: (id, record) -> the id's Node, for a record that is not a tuple (set by the
        #: graph's owner before it adds one), whose kind is :attr:`built_kind`
        self.build: Callable[[str, Any], Node] | None = None
        self.built_kind = NodeKind.DERIVED

    def add_lazy(self, node_id: str, record: Any) -> None:
        """Insert ``node_id`` (not a node yet), its node made of ``record`` (not None) when
        first read."""
        self.add_lazies([(node_id, record)])

    def add_lazies(self, items: Sequence[tuple[Any, ...]]) -> None:
        """:meth:`add_lazy` of each item's (id, record, ...), in order (one span)."""
        records, ids = self.records, []
        for item in items:
            records[item[0]] = item[1]
            ids.append(item[0])
        at, spans = dict.__len__(self) - self._made, self._spans
        if spans and spans[-1][0] == at:
            spans[-1][1].extend(ids)
        else:
            spans.append((at, ids))

    def lazy(self, node_id: str) -> Any:
        """The record of a lazy id whose node is not made yet (None: an explicit node, a
        made one, or no node)."""
        return None if dict.__contains__(self, node_id) else self.records.get(node_id)

    def made_items(self) -> Iterator[tuple[str, Node]]:
        """The nodes held now (explicit, and lazy ones made), in the dict's order, none
        made here: for a sweep that no lazy id answers (its caller says why)."""
        return iter(dict.items(self))

    def of_kind(self, kind: NodeKind) -> list[str]:
        """The ids of the nodes of ``kind`` in insertion order, no lazy node made (a lazy
        id's kind read from its record)."""
        lazy = self.records
        if not lazy:
            return [n for n, d in dict.items(self) if d.kind is kind]
        explicit = [(n, d.kind is kind) for n, d in dict.items(self) if n not in lazy]
        built = kind is self.built_kind
        out: list[str] = []
        done = 0
        for at, ids in self._spans:
            out += [n for n, hit in explicit[done:at] if hit]
            out += [n for n in ids if type(r := lazy[n]) is tuple and r[1] is kind
                    or built and type(r) is not tuple]
            done = at
        out += [n for n, hit in explicit[done:] if hit]
        return out

    def kind(self, node_id: str) -> NodeKind:
        """The kind of node ``node_id``, a lazy one's read from its record (not made)."""
        node = dict.get(self, node_id)
        if node is not None:
            return node.kind
        record = self.records[node_id]
        return record[1] if type(record) is tuple else self.built_kind

    def made_get(self, node_id: str) -> Node | None:
        """The node held for ``node_id`` (explicit or made), None for a lazy id not made
        (nothing made here)."""
        return dict.get(self, node_id)

    def record(self, node_id: str) -> Any:
        """What lazy id ``node_id``'s node is made of (made or not); KeyError for an
        explicit node."""
        return self.records[node_id]

    def __missing__(self, node_id: str) -> Node:
        record = self.records.get(node_id)
        if record is None:
            raise KeyError(node_id)
        if type(record) is tuple:
            node = Node(*record)
        elif self.build is not None:
            node = self.build(node_id, record)
        else:
            raise KeyError(node_id)
        dict.__setitem__(self, node_id, node)
        self._made += 1
        return node

    def __contains__(self, node_id: object) -> bool:
        return dict.__contains__(self, node_id) or node_id in self.records

    def get(self, node_id: str, default: Any = None) -> Any:  # type: ignore[override]
        node = dict.get(self, node_id)
        if node is not None:
            return node
        return self[node_id] if node_id in self.records else default

    def __len__(self) -> int:
        return dict.__len__(self) - self._made + len(self.records)

    def _ids(self) -> list[str]:
        """Every id in insertion order."""
        explicit = list(filterfalse(self.records.__contains__, dict.__iter__(self))) \
            if self._made else list(dict.__iter__(self))
        out: list[str] = []
        done = 0
        for at, ids in self._spans:
            out += explicit[done:at]
            out += ids
            done = at
        out += explicit[done:]
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids()) if self.records else dict.__iter__(self)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        return KeysView(self)

    def values(self) -> ValuesView[Node]:  # type: ignore[override]
        return ValuesView(self)

    def items(self) -> ItemsView[str, Node]:  # type: ignore[override]
        return ItemsView(self)

    def __repr__(self) -> str:
        return f"Nodes({dict(self.items())!r})"

    def __delitem__(self, node_id: str) -> None:
        self._explicit_only("remove")
        dict.__delitem__(self, node_id)

    def pop(self, node_id: str, *default: Any) -> Any:
        self._explicit_only("remove")
        return dict.pop(self, node_id, *default)

    def _explicit_only(self, what: str) -> None:
        """Refuse what would shift the lazy ids' recorded positions."""
        if self.records:
            raise TypeError(f"cannot {what} a node of a graph with lazy nodes")


class Graph:
    """Nodes by id (insertion ordered) with their users; O(1) edges, linear-time order."""

    def __init__(self) -> None:
        # a plain dict (C-speed reads, specialized by the interpreter) until the first lazy id
        # is added (:meth:`add_lazies`), then a :class:`Nodes` of the same nodes
        self.nodes: dict[str, Node] = {}
        #: what :attr:`Nodes.build <Nodes.build>` is once :attr:`nodes` is a Nodes
        self.build: Callable[[str, Any], Node] | None = None
        self._records: dict[str, Any] | None = None  # the Nodes' records, once it is one
        self.users: dict[str, list[str]] = {}
        self.version = 0
        self._order: list[str] | None = None
        self._order_version = -1
        self._nx: Any = None
        self._nx_version = -1

    def add(self, node: Node) -> Node:
        node_id, nodes, records = node.id, self.nodes, self._records
        if records is not None and node_id in records:
            nodes[node_id]  # a lazy id made at its position first: the new node replaces it
        nodes[node_id] = node
        users = self.users  # _link's rule for one node, inline: the per-node path is hot
        if node_id not in users:
            users[node_id] = []
        for ref in node.inputs:
            found = users.get(ref)
            if found is None:
                users[ref] = [node_id]
            else:
                found.append(node_id)
        self.version += 1
        return node

    def add_lazy(self, node_id: str, record: Any, inputs: tuple[str, ...] = ()) -> None:
        """Insert ``node_id`` as a lazy id of :attr:`nodes` (its node, whose inputs are
        ``inputs``, made of ``record`` by ``nodes.build`` when first read), its users kept
        as :meth:`add` keeps a node's."""
        self.add_lazies([(node_id, record, inputs)])

    def add_lazies(self, items: list[tuple[str, Any, tuple[str, ...]]]) -> None:
        """:meth:`add_lazy` of each (id, record, inputs), in order."""
        if not items:
            return
        nodes = self.nodes
        if not isinstance(nodes, Nodes):  # the first lazy id: the dict's nodes, in order
            nodes = Nodes()
            dict.update(nodes, self.nodes)
            nodes.build = self.build
            self.nodes, self._records = nodes, nodes.records
        nodes.add_lazies(items)
        self._link(items)

    def of_kind(self, kind: NodeKind) -> list[str]:
        """The ids of the nodes of ``kind`` in insertion order (no lazy node made)."""
        nodes = self.nodes
        if isinstance(nodes, Nodes):
            return nodes.of_kind(kind)
        return [n for n, d in nodes.items() if d.kind is kind]

    def kind(self, node_id: str) -> NodeKind:
        """Node ``node_id``'s kind (a lazy node's from its record, not made)."""
        nodes = self.nodes
        return nodes.kind(node_id) if isinstance(nodes, Nodes) else nodes[node_id].kind

    def _link(self, items: list[tuple[str, Any, tuple[str, ...]]]) -> None:
        """New nodes' users' bookkeeping, per (id, record, inputs) in order: the node's own
        list, and it a user of each input."""
        users = self.users
        for node_id, _, inputs in items:
            if node_id not in users:
                users[node_id] = []
            for ref in inputs:
                found = users.get(ref)
                if found is None:
                    users[ref] = [node_id]
                else:
                    found.append(node_id)
        self.version += len(items)

    def set_inputs(self, node_id: str, inputs: tuple[str, ...]) -> None:
        """Give an existing node (a derived tensor) its inputs."""
        node, users = self.nodes[node_id], self.users
        for ref in node.inputs:  # relink's rule for one node, inline: the per-node path is hot
            users[ref].remove(node_id)
        node.inputs = inputs
        for ref in inputs:
            found = users.get(ref)
            if found is None:
                users[ref] = [node_id]
            else:
                found.append(node_id)
        self.version += 1

    def relink(self, moves: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
        """The users' bookkeeping of each (node id, old inputs, new inputs), in order
        (:meth:`set_inputs`' rule; a lazy node's owner keeps its inputs itself)."""
        users = self.users
        for node_id, old, new in moves:
            for ref in old:
                users[ref].remove(node_id)
            for ref in new:
                found = users.get(ref)
                if found is None:
                    users[ref] = [node_id]
                else:
                    found.append(node_id)
        self.version += len(moves)

    def order(self, blocks: Mapping[str, Sequence[str]] | None = None) -> list[str]:
        """A deterministic topological order: depth-first, inputs first, in insertion order.

        Linear in nodes + edges. Raises ``ValueError`` on a cycle (find it with :meth:`cycle`).
        ``blocks`` (root id -> node ids): where the caller proved what the walk from a root
        emits (the root's block, nothing outside it reaching into it, every input from
        outside it already emitted), the block is emitted whole when the root is reached,
        not walked; the order is the same either way.
        """
        if self._order_version == self.version and self._order is not None:
            return self._order
        order: list[str] = []
        state: dict[str, int] = {}  # 1: on the stack, 2: done
        nodes = self.nodes
        if blocks:
            state.update(dict.fromkeys(chain.from_iterable(blocks.values()), 2))
            get_block, extend = blocks.get, order.extend
            for root in [n for n in nodes if n in blocks or n not in state]:  # in insertion order
                block = get_block(root)
                if block is not None:
                    extend(block)
                elif root not in state:  # not reached by an earlier root's walk
                    depth_first(root, nodes, state, order)
        else:
            for root in nodes:
                if root not in state:
                    depth_first(root, nodes, state, order)
        self._order, self._order_version = order, self.version
        return order

    def nx(self) -> Any:
        """The graph as a ``networkx.DiGraph`` (built on demand, cached until it changes)."""
        if self._nx_version != self.version:
            import networkx as nx

            g = nx.DiGraph()
            for node_id, node in self.nodes.items():
                g.add_node(node_id, **node.as_attrs())
            for node_id, node in self.nodes.items():
                for ref in node.inputs:
                    g.add_edge(ref, node_id)
            self._nx, self._nx_version = g, self.version
        return self._nx


def depth_first(root: str, nodes: Mapping[str, Node], state: dict[str, int],
                order: list[str]) -> None:
    """Append ``root`` and every input it reaches not yet in ``state`` (1: on the stack,
    2: done) to ``order``, inputs first, each node's inputs in their order; ``ValueError``
    on a cycle."""
    append = order.append
    inputs = nodes[root].inputs
    if not inputs:  # a leaf (every source): done at once
        state[root] = 2
        append(root)
        return
    state[root] = 1
    stack = [(root, iter(inputs))]
    while stack:
        node_id, rest = stack[-1]
        for ref in rest:
            s = state.get(ref)
            if s is None:
                inputs = nodes[ref].inputs
                if not inputs:  # a leaf: done without a stack frame (the same order)
                    state[ref] = 2
                    append(ref)
                    continue
                state[ref] = 1
                stack.append((ref, iter(inputs)))
                break
            if s == 1:
                raise ValueError(f"cycle through {ref}")
        else:
            stack.pop()
            state[node_id] = 2
            append(node_id)
