"""The typed IR: a closed vocabulary of node and tensor kinds, and the node graph.

In the spirit of ``torch.fx``: a :class:`Node` is a dataclass with an enum :class:`NodeKind`;
derived tensors carry a :class:`TensorKind` and bind into a :class:`Slot`. The enums are ``str``
enums, so spec YAML/JSON (which spell kinds as strings) compare and serialize unchanged, but no
module compares bare kind strings. :class:`Graph` keeps nodes in dicts with O(1) edge and version
bookkeeping and a linear-time topological order; networkx is only built on demand (``graph.g``)
for algorithms and pictures.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, KeysView, Mapping, Sequence, Set
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Any, ClassVar

from derivgraph._enum import StrEnum

__all__ = ["Graph", "HeldColumn", "HeldLeaves", "HeldNode", "Node", "NodeKind", "Nodes", "Users",
           "calls_of", "depth_first", "row_users"]

_INPUTS = attrgetter("inputs")


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


#: a node's fields after ``id``, in the order :class:`Node` sets them
_FIELDS = ("kind", "op", "args", "kwargs", "inputs", "shape", "stride", "dtype", "device")
_PER_ROW = object()  # a field not known for the whole column: read from the node made


class HeldColumn:
    """A column of nodes held as a record: their ``ids`` (row order) and ``fields(row)``,
    the field values after ``id`` (:data:`_FIELDS`' order) of row ``row``'s node. Its
    :meth:`nodes` are :class:`HeldNode` s, each made into that :class:`Node` on first use."""

    def __init__(self, ids: list[str], fields: Callable[[int], tuple[Any, ...]]) -> None:
        self.ids = ids
        self.fields = fields
        self.made: set[int] = set()  # the rows whose node was made
        self._rows: dict[str, int] | None = None  # id -> row, made on the first node made
        #: row -> its node's users list, where the graph holds them by column (:class:`Users`)
        self.users: Callable[[int], list[str]] | None = None
        #: its held nodes' class (:meth:`hold`)
        self.node_class: type[HeldNode] | None = None

    def hold(self, kind: NodeKind, op: Any = _PER_ROW) -> type[HeldNode]:
        """The class of this column's held nodes, of ``kind`` (every row's ``fields`` must
        give it); ``op``: every row's op, when the caller knows it (read then without making
        the node). Kept as :attr:`node_class` (what :meth:`node` makes)."""
        attrs: dict[str, Any] = {"__slots__": (), "column": self, "kind": kind}
        if op is not _PER_ROW:
            attrs["op"] = _held_field("op", op)
        cls = self.node_class = type("HeldNode", (HeldNode,), attrs)
        return cls

    def nodes(self, kind: NodeKind, op: Any = _PER_ROW) -> list[Node]:
        """One held node per id, of :meth:`hold` ``(kind, op)``'s class."""
        self.hold(kind, op)
        return self.held_nodes()

    def held_nodes(self) -> list[Node]:
        """One held node per id, new, of the class :meth:`hold` gave last."""
        held = list(map(object.__new__, repeat(self.node_class, len(self.ids))))
        deque(map(setattr, held, repeat("id"), self.ids), maxlen=0)  # one C-level sweep
        return held

    def node(self, row: int) -> HeldNode:
        """Row ``row``'s held node, new, of the class :meth:`hold` gave last."""
        node = object.__new__(self.node_class)
        node.id = self.ids[row]
        return node

    def rows(self) -> dict[str, int]:
        """Each id's row (built on first use, then kept)."""
        if self._rows is None:
            self._rows = dict(zip(self.ids, range(len(self.ids))))
        return self._rows

    def row(self, node_id: str) -> int:
        """The row of the node ``node_id``."""
        return self.rows()[node_id]

    def indexed(self, node_id: str) -> bool:
        """Whether ``node_id`` is a row of this column, where its row index was built (a
        made node's column's is: :meth:`HeldNode.made`)."""
        return self._rows is not None and node_id in self._rows


def _rows_of(columns: Sequence[HeldColumn]) -> list[Node]:
    """The held nodes of ``columns`` (:meth:`HeldColumn.held_nodes`), a row at a time."""
    return list(chain.from_iterable(zip(*[column.held_nodes() for column in columns])))


def _no_users(row: int) -> list[str]:
    """A leaf's users list as its add leaves it: empty."""
    return []


def row_users(reading: list[list[str]], row: int) -> list[str]:
    """Row ``row``'s users list where its readers are the columns ``reading`` (in order)."""
    return [column[row] for column in reading]


class HeldLeaves(HeldColumn):
    """A column of nodes of one ``kind`` with no field but their inputs, ``(value,)`` once
    the row's value is given (:meth:`Graph.set_fresh_inputs`, :meth:`Graph.set_input_each`
    take a stretch of rows none of which has one or was made), ``()`` before: derived
    tensors as declared (:meth:`DerivedGraph.add_derived_all
    <derivgraph.compiler.graph.DerivedGraph.add_derived_all>`)."""

    def __init__(self, ids: list[str], kind: NodeKind) -> None:
        super().__init__(ids, self._fields)
        self.kind = kind
        self.values: list[str | None] = [None] * len(ids)  # each row's value, if given

    def hold(self, kind: NodeKind, op: Any = None) -> type[HeldNode]:
        """Its held nodes' class, of ``kind``; a leaf's op is None (:meth:`_fields`)."""
        return super().hold(kind, None)

    def _fields(self, row: int) -> tuple[Any, ...]:
        value = self.values[row]
        return (self.kind, None, (), {}, () if value is None else (value,), (), (), None, None)

    def stretch(self, ids: Sequence[str]) -> int | None:
        """Where ``ids`` are a stretch of this column's rows none of which was made or has
        a value: its first row; None else."""
        try:
            at = self.ids.index(ids[0])
        except ValueError:
            return None
        end = at + len(ids)
        if self.ids[at:end] != ids or self.values[at:end].count(None) != len(ids) \
                or not self.made.isdisjoint(range(at, end)):
            return None
        return at


class HeldNode(Node):
    """A node of a :class:`HeldColumn` (its class's ``column``): ``id`` and ``kind`` are
    its own, and the first read or write of any other field makes it the :class:`Node`
    the column's ``fields`` give (its fields set in :class:`Node`'s order, its class then
    :class:`Node`), so every reader sees a :class:`Node` equal to the one made eagerly."""

    __slots__ = ()
    column: ClassVar[HeldColumn]

    def made(self) -> Node:
        """This node made (a :class:`Node` from now on)."""
        column = type(self).column
        row = column.row(self.id)
        column.made.add(row)
        self.__dict__.update(zip(_FIELDS, column.fields(row)))
        self.__class__ = Node  # type: ignore[assignment]
        return self

    def __repr__(self) -> str:
        return repr(self.made())

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self.made().__reduce_ex__(protocol)


def _held_field(name: str, value: Any = _PER_ROW) -> property:
    """Field ``name`` of a :class:`HeldNode`: made on first read or write; ``value``: the
    field's value on every row of the column, read without making the node."""

    def get(node: HeldNode) -> Any:
        return getattr(node.made(), name) if value is _PER_ROW else value

    def put(node: HeldNode, new: Any) -> None:
        setattr(node.made(), name, new)

    return property(get, put)


for _name in _FIELDS[1:]:
    setattr(HeldNode, _name, _held_field(_name))


def calls_of(nodes: Iterable[Node]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Each node's ``(args, kwargs)``; a held node's (:class:`HeldNode`, not yet made) are
    its column's ``fields`` of its row, read without making it: equal to the fields it is
    made with (new objects, not the node's)."""
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for node in nodes:
        if isinstance(node, HeldNode):
            column = type(node).column
            fields = column.fields(column.row(node.id))
            out.append((fields[2], fields[3]))
        else:
            out.append((node.args, node.kwargs))
    return out


#: the own entries' C-level reads and insert (``Users`` overrides the Python-level ones)
_has, _get, _insert = dict.__contains__, dict.get, dict.setdefault


class _HeldRuns:
    """The mapping behaviour of a ``dict`` subclass that also holds runs of ids by column
    (:class:`Users`, :class:`Nodes`): its own keys with each held run's ids placed where the run
    was held (``_spans``: ``(own keys before it, its ids)`` per run, in order), read as one
    mapping; a write that can meet a held key first settles the runs into own keys."""

    __slots__ = ()
    _held: list[Any]

    def _spans(self) -> list[tuple[int, list[str]]]:
        raise NotImplementedError

    def __len__(self) -> int:
        return dict.__len__(self) + sum(len(ids) for _, ids in self._spans())  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        if not self._held:
            return dict.__iter__(self)  # type: ignore[arg-type]
        own, parts, at = list(dict.__iter__(self)), [], 0  # type: ignore[arg-type]
        for before, ids in self._spans():
            parts += [own[at:before], ids]
            at = before
        parts.append(own[at:])
        return chain.from_iterable(parts)

    def items(self) -> Any:
        return [(node_id, self[node_id]) for node_id in self] if self._held \
            else dict.items(self)  # type: ignore[arg-type]

    def values(self) -> Any:
        return [self[node_id] for node_id in self] if self._held \
            else dict.values(self)  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    # ---- the write side: a write that can meet a held key settles the runs first -------------
    def _drop_runs(self) -> None:
        """Forget the held runs and what was made of them (their values are own keys now)."""
        raise NotImplementedError

    def _settle(self) -> None:
        """Make every held value and keep them all as own keys, in order (the eager dict)."""
        if self._held:
            items = list(self.items())
            dict.clear(self)  # type: ignore[arg-type]
            dict.update(self, items)  # type: ignore[arg-type]
            self._drop_runs()

    def __setitem__(self, node_id: str, value: Any) -> None:
        if self._held and node_id in self:  # type: ignore[operator]
            self._settle()
        dict.__setitem__(self, node_id, value)  # type: ignore[index]

    def __delitem__(self, node_id: str) -> None:
        self._settle()
        dict.__delitem__(self, node_id)  # type: ignore[arg-type]

    def setdefault(self, node_id: str, default: Any = None) -> Any:
        found = self.get(node_id)  # type: ignore[attr-defined]
        if found is None:
            self[node_id] = found = default
        return found

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._settle()
        dict.update(self, *args, **kwargs)  # type: ignore[arg-type]

    def pop(self, *args: Any) -> Any:
        self._settle()
        return dict.pop(self, *args)  # type: ignore[arg-type]

    def popitem(self) -> tuple[str, Any]:
        self._settle()
        return dict.popitem(self)  # type: ignore[arg-type]

    def clear(self) -> None:
        dict.clear(self)  # type: ignore[arg-type]
        self._drop_runs()


class Users(_HeldRuns, dict[str, list[str]]):
    """Each node's users (the ids of the nodes reading it, in order) by id: equal, key
    order included, to the ``dict`` the eager adds leave. Lists set one by one are this
    dict's own; a run of fresh held nodes (:meth:`hold`: :class:`HeldColumn` s with
    ``users``) keeps its rows' lists as their columns' ``users(row)``, each made on its
    first read or write and then kept (every reader and writer sees one list). Any other
    change to a held key first makes every list (:meth:`_settle`: the eager dict)."""

    __slots__ = ("_graph", "_held", "_columns", "_made")

    def __init__(self, graph: Graph | None = None) -> None:
        super().__init__()
        self._graph = graph
        #: held runs, in order: how many own keys came before each, and its ids
        self._held: list[tuple[int, list[str]]] = []
        self._columns: dict[int, HeldColumn] = {}  # the held columns by ``id``
        self._made: dict[str, list[str]] = {}  # held rows' lists made so far

    def hold(self, ids: list[str], columns: Iterable[HeldColumn]) -> None:
        """Add the ``ids`` (none a key yet, each a held node of the graph, not made, of one
        of ``columns``, whose ``users`` give their lists) after the keys so far."""
        self._held.append((dict.__len__(self), ids))
        self._columns.update((id(column), column) for column in columns)

    def held(self, node_id: str) -> list[str] | None:
        """The users list of ``node_id`` where it is a held row (made now if not yet); None
        else."""
        found = self._made.get(node_id)
        if found is None and self._held:
            column = self._column_of(node_id)
            if column is not None:
                assert column.users is not None
                found = self._made[node_id] = column.users(column.row(node_id))
        return found

    def _column_of(self, node_id: str) -> HeldColumn | None:
        """The held column ``node_id`` is a row of, or None."""
        if _has(self, node_id) or self._graph is None:
            return None
        nodes = self._graph.nodes
        column = nodes.column(node_id, made=True)  # a held row's, or a held node not made
        if column is not None:
            return self._columns.get(id(column))
        if node_id not in nodes:
            return None
        for column in self._columns.values():  # a made node: its column indexed its rows
            if column.indexed(node_id):
                return column
        return None

    def _drop_runs(self) -> None:
        self._held, self._columns, self._made = [], {}, {}

    # ---- the mapping: own keys and held runs, in order -------------------------------------
    def __missing__(self, node_id: str) -> list[str]:
        found = self.held(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def get(self, node_id: str, default: Any = None) -> Any:  # type: ignore[override]
        found = _get(self, node_id)
        if found is None:
            found = self.held(node_id)
        return default if found is None else found

    def __contains__(self, node_id: object) -> bool:
        return _has(self, node_id) or (bool(self._held) and isinstance(node_id, str)
                                       and (node_id in self._made
                                            or self._column_of(node_id) is not None))

    def _spans(self) -> list[tuple[int, list[str]]]:
        return self._held

    def keys(self) -> Any:
        return _UsersKeys(self) if self._held else dict.keys(self)

    def __reduce__(self) -> Any:
        return _users_of_items, (list(self.items()),)



def _users_of_items(items: list[tuple[str, list[str]]]) -> Users:
    """A :class:`Users` of own keys ``items`` (unpickling)."""
    users = Users()
    dict.update(users, items)
    return users


class _UsersKeys(KeysView[str]):
    """:meth:`Users.keys`: ``isdisjoint`` by two C-level sweeps (every held id is a node)."""

    _mapping: Users

    def isdisjoint(self, other: Iterable[Any]) -> bool:
        users = self._mapping
        if not isinstance(other, (set, frozenset)):
            other = set(other)
        if not dict.keys(users).isdisjoint(other):
            return False
        graph = users._graph
        return not users._held or graph is None or graph.nodes.keys().isdisjoint(other)


class Nodes(_HeldRuns, dict[str, Node]):
    """The graph's nodes by id: equal, key order included, to the ``dict`` the eager adds
    leave. Nodes set one by one are this dict's own; a run of fresh held nodes
    (:meth:`hold`: :class:`HeldColumn` s, each with its :meth:`HeldColumn.hold` class)
    keeps only its ids and columns: a row's :class:`HeldNode` is made on its first read
    (:meth:`held`) and then kept (every reader sees one node, made into a :class:`Node`
    on first use of a field as any held node). Which column an id is a row of is read
    without making its node (:meth:`column`). Any other change to a held key first makes
    every node (:meth:`_settle`: the eager dict)."""

    __slots__ = ("_held", "_made")

    def __init__(self) -> None:
        super().__init__()
        self._held: list[_Run] = []  # held runs, in order
        self._made: dict[str, Node] = {}  # held rows' nodes made so far

    def hold(self, ids: list[str], columns: Sequence[HeldColumn],
             id_set: Set[str] | None = None) -> None:
        """Add the ``ids`` (none a key yet, none twice; the ids of ``columns`` a row at a
        time, ``ids[k::len(columns)]`` column ``k``'s, every column as long; ``id_set``:
        their set, where the caller made it) after the keys so far, each id's node its
        column's row's."""
        columns = list(columns)
        rows = len(columns[0].ids) if columns else 0
        if len(ids) != rows * len(columns) or any(len(c.ids) != rows for c in columns) or \
                rows and (ids[:len(columns)] != [c.ids[0] for c in columns]
                          or ids[-len(columns):] != [c.ids[-1] for c in columns]):
            raise ValueError("the ids are the columns' ids a row at a time")
        self._held.append(_Run(dict.__len__(self), ids, columns,
                               set(ids) if id_set is None else id_set))

    def _place(self, node_id: Any) -> tuple[HeldColumn, int] | None:
        """The held column and row of ``node_id``, or None (no node made)."""
        for run in self._held:
            if node_id in run.id_set:
                at = run.position(node_id)
                k = len(run.columns)
                return run.columns[at % k], at // k
        return None

    def held(self, node_id: Any) -> Node | None:
        """The node of ``node_id`` where it is a held row (made now if not yet); None
        else."""
        found = self._made.get(node_id)
        if found is None and self._held:
            place = self._place(node_id)
            if place is not None:
                column, row = place
                found = self._made[node_id] = column.node(row)
        return found

    def column(self, node_id: str, made: bool = False) -> HeldColumn | None:
        """The column of ``node_id``'s node where it is a held node not made into a
        :class:`Node` yet (its class's ``column``), read without making a node; with
        ``made``, a held row's column whether or not its node was made. None else."""
        node = _get(self, node_id)
        if node is None and self._held:
            node = self._made.get(node_id)
            if node is None or made:
                place = self._place(node_id)
                return None if place is None else place[0]
        return getattr(type(node), "column", None)

    def _drop_runs(self) -> None:
        self._held, self._made = [], {}

    # ---- the mapping: own keys and held runs, in order -------------------------------------
    def __missing__(self, node_id: str) -> Node:
        found = self.held(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def get(self, node_id: str, default: Any = None) -> Any:  # type: ignore[override]
        found = _get(self, node_id)
        if found is None and self._held:
            found = self.held(node_id)
        return default if found is None else found

    def __contains__(self, node_id: object) -> bool:
        return _has(self, node_id) or (bool(self._held) and (
            node_id in self._made or self._place(node_id) is not None))

    def _spans(self) -> list[tuple[int, list[str]]]:
        return [(run.before, run.ids) for run in self._held]

    def keys(self) -> Any:
        return _NodesKeys(self) if self._held else dict.keys(self)

    def __reduce__(self) -> Any:
        return _nodes_of_items, (list(self.items()),)



class _Run:
    """A held run of :class:`Nodes`: how many own keys came before it, its ids (its
    columns' a row at a time), its columns and the set of its ids. An id's position is
    found by a C-level scan of the ids until the scans have read as many ids as the run
    holds, then by an index built once (:meth:`position`): at most twice the index's
    work, none where the reads are few and early (the compile's)."""

    __slots__ = ("before", "ids", "columns", "id_set", "_index", "_scanned")

    def __init__(self, before: int, ids: list[str], columns: list[HeldColumn],
                 id_set: Set[str]) -> None:
        self.before, self.ids, self.columns, self.id_set = before, ids, columns, id_set
        self._index: dict[str, int] | None = None
        self._scanned = 0  # how many ids the scans read so far

    def position(self, node_id: str) -> int:
        """The position of ``node_id`` (one of :attr:`ids`)."""
        if self._index is None:
            if self._scanned < len(self.ids):
                at = self.ids.index(node_id)
                self._scanned += at + 1
                return at
            self._index = dict(zip(self.ids, range(len(self.ids))))
        return self._index[node_id]


def _nodes_of_items(items: list[tuple[str, Node]]) -> Nodes:
    """A :class:`Nodes` of own keys ``items`` (unpickling)."""
    nodes = Nodes()
    dict.update(nodes, items)
    return nodes


class _NodesKeys(KeysView[str]):
    """:meth:`Nodes.keys`: ``isdisjoint`` by C-level sweeps (the own keys', each held
    run's set)."""

    _mapping: Nodes

    def isdisjoint(self, other: Iterable[Any]) -> bool:
        nodes = self._mapping
        if not isinstance(other, (set, frozenset)):
            other = set(other)
        return dict.keys(nodes).isdisjoint(other) and \
            all(run.id_set.isdisjoint(other) for run in nodes._held)


class Graph:
    """Nodes by id (insertion ordered) with their users; O(1) edges, linear-time order."""

    def __init__(self) -> None:
        self.nodes = Nodes()
        self.users = Users(self)
        self.version = 0
        #: how many nodes the adds were given (a node that replaced another counts too)
        self.added = 0
        self._order: list[str] | None = None
        self._order_version = -1
        self._spanned: list[tuple[int, int]] = []  # where the cached order took its spans
        self._nx: Any = None
        self._nx_version = -1

    def add(self, node: Node) -> Node:
        node_id, users = node.id, self.users
        held = users._held  # held runs: a key not its own may be theirs (Users.held)
        self.nodes[node_id] = node
        if not (held and users.held(node_id) is not None):
            _insert(users, node_id, [])
        for ref in node.inputs:
            found = _get(users, ref)
            if found is None and held:
                found = users.held(ref)
            if found is None:
                _insert(users, ref, [node_id])
            else:
                found.append(node_id)
        self.version += 1
        self.added += 1
        return node

    def add_leaves(self, nodes: list[Node] | None, ids: list[str] | None = None,
                   columns: Sequence[HeldColumn] = (),
                   id_set: Set[str] | None = None) -> None:
        """:meth:`add` of each node (none with an input), in order (``ids``: their ids,
        where the caller has them; ``id_set``: the set of ``ids``, where the caller made
        it). ``columns``: every node is a held node of one of them, not made; where no id
        is a key of the users yet, their lists are then held by those columns
        (:meth:`Users.hold`, each column's ``users`` set to none). ``nodes`` None: the
        nodes are ``columns``' rows (``ids`` their ids a row at a time, each column with
        its :meth:`HeldColumn.hold` class), held by them where no id is a key yet
        (:meth:`Nodes.hold`), else made."""
        if ids is None:
            assert nodes is not None
            ids = [node.id for node in nodes]
        users = self.users
        # before the nodes are added (held ids are nodes)
        fresh = users.keys().isdisjoint(ids if id_set is None else id_set)
        count = len(ids) if nodes is None else len(nodes)
        if nodes is None and fresh and (id_set is not None or len(set(ids)) == len(ids)):
            self.nodes.hold(ids, columns, id_set)
        else:
            if nodes is None:
                nodes = _rows_of(columns)
            if fresh:  # no id is a node (every node's id has users): added after the rest
                dict.update(self.nodes, zip(ids, nodes))
            else:
                self.nodes.update(zip(ids, nodes))
        if fresh and columns:
            for column in columns:
                column.users = _no_users
            users.hold(ids, columns)
        elif fresh:
            dict.update(users, [(node_id, []) for node_id in ids])
        else:
            for node_id in ids:
                if node_id not in users:
                    users[node_id] = []
        self.version += count
        self.added += count

    def add_fresh(self, ids: list[str], nodes: list[Node] | None,
                  users: list[list[str]] | Sequence[HeldColumn],
                  id_set: Set[str] | None = None) -> None:
        """:meth:`add` of each node (id ``ids[i]``), in order, where no node's id has a node
        or users yet, none twice, and every input is a node added before it among ``nodes``
        (checked by the caller): ``users[i]`` is node ``i``'s users list as those adds leave
        it (the nodes of ``nodes`` that read it, in order; the caller builds it from its
        template); or ``users`` the held columns of every node of ``nodes`` (none made),
        whose ``users(row)`` give those lists (:meth:`Users.hold`). ``nodes`` None: they
        are those columns' rows (``ids`` a row at a time, each column with its
        :meth:`HeldColumn.hold` class), held by them (:meth:`Nodes.hold`; ``id_set``: the
        set of ``ids``, where the caller made it)."""
        if nodes is None:
            self.nodes.hold(ids, users, id_set)  # type: ignore[arg-type]
            count = len(ids)
        else:
            self.nodes.update(zip(ids, nodes))
            count = len(nodes)
        if users and isinstance(users[0], HeldColumn):
            self.users.hold(ids, users)  # type: ignore[arg-type]
        else:
            dict.update(self.users, zip(ids, users))
        self.version += count
        self.added += count

    def set_inputs(self, node_id: str, inputs: tuple[str, ...]) -> None:
        """Give an existing node (a derived tensor) its inputs."""
        node, users = self.nodes[node_id], self.users
        for ref in node.inputs:
            users[ref].remove(node_id)
        node.inputs = inputs
        for ref in inputs:
            found = _get(users, ref)
            if found is None and users._held:
                found = users.held(ref)
            if found is None:
                _insert(users, ref, [node_id])
            else:
                found.append(node_id)
        self.version += 1

    def set_input_each(self, ids: list[str], values: list[str]) -> None:
        """:meth:`set_inputs` ``(node_id, (value_id,))`` of each pair of ``ids`` and
        ``values``, in order (a node with no inputs yet, as a derived tensor is made, without
        the call; lanes of held leaves, :meth:`_held_stretch`, take the values as
        columns)."""
        nodes, users, fresh = self.nodes, self.users, 0
        held, by_run = self._held_stretch(ids, values), users._held
        if held and values.count(values[0]) == len(values):  # one value (a constant node
            # every row reads): its users list takes the ids in one extend, as the appends
            found = _get(users, values[0])
            if found is None and by_run:
                found = users.held(values[0])
            if found is None:
                _insert(users, values[0], list(ids))
            else:
                found.extend(ids)
            self.version += len(ids)
            return
        for node_id, value_id in zip(ids, values, strict=True):
            if not held:
                node = nodes[node_id]
                if node.inputs:
                    self.set_inputs(node_id, (value_id,))
                    continue
                node.inputs = (value_id,)
            found = _get(users, value_id)
            if found is None and by_run:
                found = users.held(value_id)
            if found is None:
                _insert(users, value_id, [node_id])
            else:
                found.append(node_id)
            fresh += 1
        self.version += fresh

    def without_inputs(self, ids: list[str]) -> bool:
        """Whether no node of ``ids`` has an input yet (lanes of held leaves none of which
        was made or given a value, :meth:`_held`: none, read off the columns)."""
        if ids and self._held(ids) is not None:
            return True
        return not any(map(_INPUTS, map(self.nodes.__getitem__, ids)))

    def _held(self, ids: Sequence[str]) -> list[tuple[HeldLeaves, int]] | None:
        """Where ``ids`` (not empty) are ``k`` lanes a row at a time (lane ``j``:
        ``ids[j::k]``, ``k`` the position of the next node of ``ids[0]``'s column), each a
        stretch of a distinct :class:`HeldLeaves` column (the lane's nodes its nodes, none
        made, none given a value): per lane, its column and the stretch's first row; None
        else. A graph never replaces a node, so a column's nodes are the graph's."""
        column_of = self.nodes.column  # a held node's not made (made none)
        first = column_of(ids[0])
        if type(first) is not HeldLeaves:
            return None
        k = 1
        while k < len(ids):  # the lanes: up to the next node of the first one's column
            column = column_of(ids[k])
            if column is first:
                break
            if type(column) is not HeldLeaves:
                return None
            k += 1
        if len(ids) % k:
            return None
        lanes = []
        for j in range(k):
            column = column_of(ids[j])
            at = column.stretch(ids[j::k]) if type(column) is HeldLeaves else None
            if at is None:
                return None
            lanes.append((column, at))
        if len({id(column) for column, _ in lanes}) != k:
            return None
        return lanes

    def _held_stretch(self, ids: Sequence[str], values: Sequence[str]) -> bool:
        """Give each node of ``ids`` its value of ``values`` as its lane's column's
        (:meth:`_held`), when ``ids`` are such lanes: whether they were."""
        found = self._held(ids) if ids else None
        if found is None:
            return False
        if len(ids) != len(values):
            raise ValueError("one value per node")
        k = len(found)
        for j, (column, at) in enumerate(found):
            lane = values[j::k]
            column.values[at:at + len(lane)] = lane
        return True

    def set_fresh_inputs(self, ids: list[str], values: list[str]) -> None:
        """What :meth:`set_input_each` leaves where no node of ``ids`` has an input yet
        (:meth:`without_inputs`) and each value's users list already names the nodes that
        take it, in order (the caller built it): each node's inputs ``(value,)``, the
        users lists not touched."""
        if len(ids) != len(values):
            raise ValueError("one value per node")
        if not self._held_stretch(ids, values):  # held leaves take them as a column
            deque(map(setattr, map(self.nodes.__getitem__, ids), repeat("inputs"),
                      zip(values)), maxlen=0)  # one C-level sweep: each node's ``(value,)``
        self.version += len(ids)

    def order(self, blocks: Mapping[str, Sequence[str]] | None = None,
              spans: Sequence[tuple[int, int, list[str] | None]] = ()) -> list[str]:
        """A deterministic topological order: depth-first, inputs first, in insertion order.

        Linear in nodes + edges. Raises ``ValueError`` on a cycle (find it with :meth:`cycle`).
        ``blocks`` (root id -> node ids): where the caller proved what the walk from a root
        emits (the root's block, nothing outside it reaching into it, every input from
        outside it already emitted), the block is emitted whole when the root is reached,
        not walked; the order is the same either way. ``spans`` (``start``, ``stop``,
        ``emit``): where the caller proved that the walk of the nodes at those positions of
        the insertion order emits ``emit`` (None: nothing) and that nothing else reaches
        them, ``emit`` is emitted there and they are not walked; a walk that reached one of
        them anyway (the order then longer than the graph) or spans that overlap give the
        order without spans.
        """
        if self._order_version == self.version and self._order is not None:
            return self._order
        order: list[str] = []
        state: dict[str, int] = {}  # 1: on the stack, 2: done
        nodes = self.nodes
        if blocks:
            state.update(dict.fromkeys(chain.from_iterable(blocks.values()), 2))
        parts: list[tuple[Iterable[str], list[str] | None]] = [(nodes, None)]
        spanned: list[tuple[int, int]] = []
        if spans:
            keys, at = list(nodes), 0
            parts = []
            for start, stop, emit in sorted(spans, key=itemgetter(0)):
                if start < at or stop > len(keys):
                    return self.order(blocks)
                parts.append((keys[at:start], emit))
                at = stop
            parts.append((keys[at:], None))
        for roots, emit in parts:
            if blocks:
                get_block, extend = blocks.get, order.extend
                for root in [n for n in roots if n in blocks or n not in state]:
                    block = get_block(root)  # in insertion order
                    if block is not None:
                        extend(block)
                    elif root not in state:  # not reached by an earlier root's walk
                        depth_first(root, nodes, state, order)
            else:
                for root in roots:
                    if root not in state:
                        depth_first(root, nodes, state, order)
            if emit:
                spanned.append((len(order), len(order) + len(emit)))
                order += emit
        if spans and len(order) != len(nodes):
            return self.order(blocks)
        self._order, self._order_version, self._spanned = order, self.version, spanned
        return order

    def spanned(self) -> list[tuple[int, int]]:
        """Where the current order (:meth:`order`'s cached one) holds what its spans emitted:
        ``(start, stop)`` positions, in order (empty when it took no span or is stale)."""
        if self._order_version == self.version and self._order is not None:
            return self._spanned
        return []

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
