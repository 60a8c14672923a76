"""The DAG of derived tensors: references, derived-tensor records, and the graph container.

Node kinds are :class:`derivgraph.compiler.ir.NodeKind`: ``SOURCE`` (a tensor the engine owns, read
at its
path), ``OP`` (a registered op over other nodes and Python constants; identical subexpressions
share one node across specs and layers) and ``DERIVED`` (a declared derived tensor bound to an
owner; its one input is its value).

This module holds data structures and queries only; :mod:`derivgraph.compiler.build` builds the
graph.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, KeysView, Mapping, Sequence, Set
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter, is_, itemgetter, or_
from typing import Any

import torch
from torch import nn

from derivgraph.compiler.bind import BoundSpec
from derivgraph.compiler.instances import RowIds
from derivgraph.compiler.ir import Graph, HeldColumn, HeldLeaves, Node, NodeKind
from derivgraph.compiler.row_deps import SourceDeps, row_source_deps
from derivgraph.errors import Rule, SourceLocation, SpecIssue, SpecValidationError
from derivgraph.spec.kinds import TensorKind
from derivgraph.spec.model import DerivedTensor

__all__ = ["DerivedGraph", "DerivedIds", "DerivedNode", "DerivedView", "HeldDerived", "HeldRun",
           "NodeRef", "freeze", "natural_key", "refs_in", "substitute", "tensor_kind"]


@dataclass(frozen=True)
class NodeRef:
    """A reference to a graph node inside op arguments."""

    id: str


_ID = attrgetter("id")
_FIRST = itemgetter(0)

#: the node kinds the builders write, read once (an enum member is a class attribute read)
_SOURCE, _OP, _DERIVED = NodeKind.SOURCE, NodeKind.OP, NodeKind.DERIVED


def _unique(refs: list[str]) -> tuple[str, ...]:
    """``refs`` without repeats, first use first (one or two refs without the dict)."""
    if len(refs) < 2 or (len(refs) == 2 and refs[0] != refs[1]):
        return tuple(refs)
    return tuple(dict.fromkeys(refs))


#: a spec's kind string -> its TensorKind
_KINDS: dict[str, TensorKind] = {kind.value: kind for kind in TensorKind}


def tensor_kind(decl: DerivedTensor) -> TensorKind:
    """``decl``'s kind as a :class:`TensorKind` member (a spec built with ``model_construct``
    may hold the word)."""
    kind = _KINDS.get(decl.kind)  # TensorKind(...) without the enum call per node
    return TensorKind(decl.kind) if kind is None else kind


#: an argument :class:`DerivedNode` was not given (its field's default is made)
_UNSET: Any = object()


@dataclass(init=False)
class DerivedNode:
    """A declared derived tensor bound to one module."""

    id: str
    bound: BoundSpec
    decl: DerivedTensor
    owner_path: str  # from the model root
    input: str | None  # node id of the value (or alias target / view base chain)
    device: torch.device
    params: dict[str, Any]
    meta: torch.Tensor | None  # inferred value on the meta device
    _kind: TensorKind = field(init=False, repr=False)
    # the defaults are stated once, in __init__ (no generated one: a column passes its kind)

    def __init__(self, id: str, bound: BoundSpec, decl: DerivedTensor, owner_path: str,
                 input: str | None = None, device: torch.device = _UNSET,
                 params: dict[str, Any] = _UNSET, meta: torch.Tensor | None = None,
                 kind: TensorKind | None = None) -> None:
        """The fields in their order (``device`` a new CPU device, ``params`` a new dict
        where not given); ``kind``: :func:`tensor_kind` of ``decl`` where the caller read it
        (a column of one declaration reads it once), else read here."""
        self.id = id
        self.bound = bound
        self.decl = decl
        self.owner_path = owner_path
        self.input = input
        self.device = torch.device("cpu") if device is _UNSET else device
        self.params = {} if params is _UNSET else params
        self.meta = meta
        self._kind = tensor_kind(decl) if kind is None else kind

    @property
    def kind(self) -> TensorKind:
        return self._kind

    @property
    def where(self) -> str:
        return f"{self.bound.spec.name}:{self.decl.name}"


#: a derived node's input
_INPUT = attrgetter("input")


class Same(Sequence[Any]):
    """``[value] * n`` as a read-only sequence holding ``value`` once (a held column's field
    set for every row, :meth:`HeldDerived.set_all`): row ``i`` is ``value`` for ``0 <= i <
    n``, as the list's; not a list of ``n`` references (each one a reference every young
    collection walks while the column is young)."""

    __slots__ = ("value", "n")

    def __init__(self, value: Any, n: int) -> None:
        self.value, self.n = value, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.value] * len(range(self.n)[i])
        range(self.n)[i]  # noqa: B018 (an index out of range raises as a list's)
        return self.value

    def __iter__(self) -> Iterator[Any]:
        return repeat(self.value, self.n)

    def __eq__(self, other: object) -> bool:
        """As the list's: equal to a list or :class:`Same` of the same items."""
        if isinstance(other, (list, Same)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Same({self.value!r}, {self.n})"


class HeldDerived:
    """The derived tensors of one declaration over a run of layers, held as columns: their
    ``ids``, bound specs, owner paths, devices and params, the declaration and its kind
    once. Each row's :class:`DerivedNode` is made when the graph first needs one of its
    run's nodes (:meth:`nodes`, memoized), with what was written to the column before
    (:meth:`set_inputs`, :meth:`set_all`: the nodes' ``input``, ``meta`` and ``device``);
    a write after it goes to the nodes. A made node equals the one made eagerly with the
    same fields (:class:`DerivedNode`'s own ``__init__`` makes it)."""

    __slots__ = ("ids", "bounds", "decl", "paths", "devices", "params", "kind", "inputs",
                 "metas", "made")

    def __init__(self, ids: list[str], bounds: list[BoundSpec], decl: DerivedTensor,
                 paths: list[str], devices: list[torch.device], params: list[dict[str, Any]],
                 kind: TensorKind) -> None:
        self.ids, self.bounds, self.decl, self.paths = ids, bounds, decl, paths
        self.devices, self.params, self.kind = devices, params, kind
        self.inputs: list[str | None] | None = None  # each row's input (None: every row's None)
        self.metas: list[Any] | None = None  # each row's meta (None: every row's None)
        self.made: list[DerivedNode] | None = None  # the nodes, once made

    def __len__(self) -> int:
        return len(self.ids)

    def nodes(self) -> list[DerivedNode]:
        """Each row's node (made on the first call, one ``__init__`` per row)."""
        made = self.made
        if made is None:
            made = self.made = list(map(
                DerivedNode, self.ids, self.bounds, repeat(self.decl), self.paths,
                repeat(None) if self.inputs is None else self.inputs, self.devices,
                self.params, repeat(None) if self.metas is None else self.metas,
                repeat(self.kind)))
        return made

    def input_values(self) -> list[str | None]:
        """Each row's input (its node's ``input``), read without making the nodes."""
        if self.made is not None:
            return list(map(_INPUT, self.made))
        return [None] * len(self.ids) if self.inputs is None else list(self.inputs)

    def set_inputs(self, values: list[str]) -> None:
        """Give row ``i``'s node the input ``values[i]``."""
        if len(values) != len(self.ids):
            raise ValueError("one value per node")
        if self.made is not None:
            deque(map(setattr, self.made, repeat("input"), values), maxlen=0)
        else:
            self.inputs = list(values)

    def set_all(self, name: str, value: Any) -> None:
        """Set field ``name`` (``meta`` or ``device``) of every row's node to ``value``."""
        if self.made is not None:
            deque(map(setattr, self.made, repeat(name), repeat(value)), maxlen=0)
        elif name == "meta":
            self.metas = Same(value, len(self.ids))
        elif name == "device":
            self.devices = Same(value, len(self.ids))
        else:
            raise ValueError(f"a held column does not hold {name!r}")


def natural_key(path: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


#: Python constants with no nodes inside: frozen as (type name, value), skipped by the walks
_ATOMS = frozenset({int, str, bool, type(None)})


def freeze(value: Any) -> Any:
    t = type(value)
    if t in _ATOMS:
        return (t.__name__, value)
    if t is NodeRef:
        return ("ref", value.id)
    if t is tuple or t is list:
        return ("seq", tuple([freeze(v) for v in value]))
    if t is float:  # what _freeze_other gives a float, without its isinstance chain
        return ("float", value.hex())
    if t is dict:
        return ("dict", tuple(sorted((k, freeze(v)) for k, v in value.items())))
    return _freeze_other(value)


def _freeze_other(value: Any) -> Any:
    if isinstance(value, NodeRef):
        return ("ref", value.id)
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(freeze(v) for v in value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, freeze(v)) for k, v in value.items())))
    if isinstance(value, (torch.dtype, torch.device)):
        return ("torch", str(value))
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def refs_in(value: Any) -> list[str]:
    """Node ids referenced anywhere inside an op argument."""
    t = type(value)
    if t is NodeRef:
        return [value.id]
    if t is tuple or t is list:
        out: list[str] = []
        for v in value:
            tv = type(v)
            if tv is NodeRef:
                out.append(v.id)
            elif tv not in _ATOMS and tv is not float:
                out += refs_in(v)
        return out
    if isinstance(value, NodeRef):
        return [value.id]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in refs_in(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs_in(v)]
    return []


def substitute(value: Any, lookup: Any) -> Any:
    """Replace every NodeRef in an op argument by ``lookup(node_id)``."""
    t = type(value)
    if t is NodeRef:
        return lookup(value.id)
    if t in _ATOMS or t is float:
        return value
    if t is tuple:  # the common case (op arguments), without a call per plain item
        out = []
        for v in value:
            tv = type(v)
            out.append(lookup(v.id) if tv is NodeRef else
                       v if tv in _ATOMS or tv is float else substitute(v, lookup))
        return tuple(out)
    if t is dict and not value:
        return {}
    if isinstance(value, NodeRef):
        return lookup(value.id)
    if isinstance(value, list):
        return [substitute(v, lookup) for v in value]
    if isinstance(value, tuple):
        return tuple([substitute(v, lookup) for v in value])
    if isinstance(value, dict):
        return {k: substitute(v, lookup) for k, v in value.items()}
    return value


class HeldRun:
    """The rows of a run of layers whose derived tensors are held by column (``columns``,
    one :class:`HeldDerived` per declaration, in the declaration order), row ``first``
    the run's first (the rows' numbers are the caller's): what each row's node list is
    to a reader that must not make the nodes (:meth:`key`), or made (:meth:`row`)."""

    __slots__ = ("columns", "first")

    def __init__(self, columns: list[HeldDerived], first: int) -> None:
        self.columns, self.first = columns, first

    def __len__(self) -> int:
        """How many derived tensors each row has (one per column)."""
        return len(self.columns)

    def key(self, at: int) -> tuple[tuple[int, torch.device], ...]:
        """Row ``at``'s ``(id(node.decl), node.device)`` of each node, in order."""
        i = at - self.first
        return tuple([(id(column.decl), column.devices[i]) for column in self.columns])

    def row(self, graph: DerivedGraph, at: int) -> list[DerivedNode]:
        """Row ``at``'s nodes, in order (their columns' nodes made: ``graph``'s
        :meth:`~DerivedGraph.derived_node`)."""
        i = at - self.first
        found = [graph.derived_node(column.ids[i]) for column in self.columns]
        assert all(node is not None for node in found)  # a held row's id is a derived tensor
        return found  # type: ignore[return-value]


class DerivedIds(Set[str]):
    """The ids of a graph's derived tensors with held runs (:meth:`DerivedGraph.hold_derived`),
    in order: the made nodes' (``made``, the dict's keys), then each held run's (its ids a
    row at a time); ``in`` and ``isdisjoint`` read the runs' id sets, no node made."""

    __slots__ = ("_made", "_held")

    def __init__(self, made: KeysView[str],
                 held: list[tuple[list[str], Set[str], list[HeldDerived]]]) -> None:
        self._made, self._held = made, held

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._made or any(node_id in ids for _, ids, _ in self._held)

    def __iter__(self) -> Iterator[str]:
        return chain(self._made, *[ids for ids, _, _ in self._held])

    def __len__(self) -> int:
        return len(self._made) + sum(len(ids) for ids, _, _ in self._held)

    def isdisjoint(self, other: Iterable[Any]) -> bool:
        other = other if isinstance(other, (set, frozenset)) else set(other)
        return self._made.isdisjoint(other) and all(ids.isdisjoint(other)
                                                    for _, ids, _ in self._held)


class DerivedView(Mapping[str, DerivedNode]):
    """A graph's derived tensors by id (:attr:`DerivedGraph.derived`) as a mapping that
    makes the held columns' nodes only when one of theirs is read
    (:meth:`DerivedGraph.derived_node`); ``in``, iteration and ``len`` make none."""

    __slots__ = ("_graph",)

    def __init__(self, graph: DerivedGraph) -> None:
        self._graph = graph

    def __getitem__(self, node_id: str) -> DerivedNode:
        node = self._graph.derived_node(node_id)
        if node is None:
            raise KeyError(node_id)
        return node

    def get(self, node_id: str, default: Any = None) -> Any:  # type: ignore[override]
        node = self._graph.derived_node(node_id)
        return default if node is None else node

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._graph.derived_ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._graph.derived_ids)

    def __len__(self) -> int:
        return len(self._graph.derived_ids)


class DerivedGraph:
    """The model's IR graph (:class:`~derivgraph.compiler.ir.Graph`) plus the issues found building
    it."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.ir = Graph()
        # every made derived tensor's node by id, in order; then the held runs' (each its ids
        # a row at a time, the set of them, its columns: :meth:`hold_derived`), put in at
        # the first read that needs a node of one (:attr:`derived`)
        self._derived: dict[str, DerivedNode] = {}
        self._held: list[tuple[list[str], Set[str], list[HeldDerived]]] = []
        self._view = DerivedView(self)
        self.issues: list[SpecIssue] = []
        self._cse_table: dict[Any, str] = {}  # :attr:`_cse` once every due key is in it
        # the keys of column-replayed runs' ops, not yet in the table: each call gives one
        # run's (key, op id) pairs in the order its rows' replays would add them
        self._cse_due: list[Callable[[], Iterable[tuple[Any, str]]]] = []
        self._op_count = 0
        self.op_names: set[str] = set()  # the op of every op node (a pass may skip its sweep)
        self.cse_hits = 0
        self.stamped = 0  # layers stamped from a template (derivgraph.compiler.stamp)
        self.params_stamped = 0  # bound specs whose params came from a template
        # their instance tables, one per template (derivgraph.compiler.instances)
        self.stamps: list[Any] = []
        # the stamper's run tables: per table whose rows are one run's, its derived tensors
        # by column (Stamper.run_nodes; instances.run_column reads them)
        self.run_nodes: dict[int, tuple[Any, ...]] = {}
        self.layer_cache: tuple[int, Any] = (-1, None)  # the proven ones, by graph version
        # the rule of stamped rows' ids, with the columns the build made by it (read by
        # the rows' proof, instances.consistent_rows)
        self.row_ids = RowIds()
        # the closed tables the order's spans were made of (every row of each), by version
        self.span_cache: tuple[int, Any] = (-1, None)
        self._deps: dict[str, frozenset[str]] = SourceDeps()
        self._deps_version = -1
        # every source node's id, in insertion order, kept as nodes are added (:meth:`sources`):
        # complete while the IR's adds were given :attr:`_source_adds` nodes (:meth:`_added`)
        self._source_ids: list[str] = []
        self._source_adds = 0
        # each source tensor as building read it (handed to the compile's evaluation, then
        # dropped: a plan must not keep a tensor the engine may replace)
        self.read_sources: dict[str, torch.Tensor] = {}
        # per source column a column replay placed (:meth:`Replay.run_rows
        # <derivgraph.compiler.replay.Replay.run_rows>`): its tensors, in row order, and the
        # layout (class, shape, stride, dtype, device) the build's column proof proved of each
        # (handed to the compile's layout book with :attr:`read_sources`, then dropped)
        self.proven_sources: list[tuple[list[torch.Tensor], tuple[Any, ...]]] = []
        self.meta_env: dict[str, Any] = {}  # node id -> meta value (set by shape inference)
        # what shape inference wrote of the closed tables whose rows took their template's meta
        # values (:func:`~derivgraph.compiler.infer.rows_hold_metas` reads it): the env, the
        # graph version, and per table (by id) the table, its rows list, length and the values
        self.meta_rows: tuple[Any, int, dict[int, tuple[Any, ...]]] = (None, -1, {})
        # every existing node a graph call named from outside the stamped row that made it
        # (what opens a row: :func:`derivgraph.compiler.layers.closed_layers`)
        self.touched: set[str] = set()

    @property
    def nodes(self) -> dict[str, Node]:
        return self.ir.nodes

    @property
    def derived(self) -> dict[str, DerivedNode]:
        """Every derived tensor's node by id, in the order they were added; the held
        columns' nodes are made (:meth:`HeldDerived.nodes`) and put in first, in their
        places (after every node made before them: :meth:`add_derived` puts them in first)."""
        if self._held:  # emptied in place: a DerivedIds read before sees them in the dict
            held = self._held[:]
            self._held.clear()
            for ids, _, columns in held:  # one insert per run, a row at a time
                self._derived.update(zip(ids, chain.from_iterable(
                    zip(*[column.nodes() for column in columns]))))
        return self._derived

    @property
    def derived_view(self) -> Mapping[str, DerivedNode]:
        """:attr:`derived` as a mapping that makes the held columns' nodes only when one of
        them is read (:class:`DerivedView`); :attr:`derived` itself where none is held."""
        return self._view if self._held else self._derived

    def made_derived(self) -> list[tuple[str, DerivedNode]]:
        """The (id, node) of :attr:`derived` whose node is made, in order (the held
        columns' rows left out)."""
        return list(self._derived.items())

    def held_columns(self) -> list[HeldDerived]:
        """The held columns whose nodes are not in :attr:`derived` yet."""
        return [column for _, _, columns in self._held for column in columns]

    def held_column(self, ids: list[str]) -> HeldDerived | None:
        """The held column whose ids are ``ids`` (equal, in order), its nodes made or not;
        None where no held column has them (or :attr:`derived` was read since)."""
        if not ids:
            return None
        for _, id_set, columns in self._held:
            if ids[0] in id_set:
                for column in columns:
                    if column.ids == ids:
                        return column
        return None

    @property
    def derived_ids(self) -> Set[str]:
        """The ids of :attr:`derived`, in order, none of their nodes made
        (:class:`DerivedIds`; the dict's keys where none is held)."""
        if not self._held:
            return self._derived.keys()
        return DerivedIds(self._derived.keys(), self._held)

    def derived_each(self, ids: Iterable[str]) -> list[bool]:
        """Whether each id of ``ids`` is a derived tensor's (C-level sweeps, no node made):
        where ``ids`` outnumber the derived tensors, one sweep of one set of them all (the
        made ones' ids and the held runs'), else a sweep of each, first as a disjointness
        test (no list made; each stops at its first hit): where no set holds any of
        ``ids`` (a source path's probe), every answer is False."""
        ids = list(ids)
        held_sets = [id_set for _, id_set, _ in self._held]
        if held_sets and len(ids) > len(self._derived) + sum(map(len, held_sets)):
            every = set(self._derived)
            every.update(*held_sets)
            return list(map(every.__contains__, ids))
        if self._derived.keys().isdisjoint(ids) and all(
                id_set.isdisjoint(ids) for id_set in held_sets):
            return [False] * len(ids)
        found = list(map(self._derived.__contains__, ids))
        for id_set in held_sets:
            held = list(map(id_set.__contains__, ids))
            if any(held):  # else found stands (a source path's probe: none is derived)
                found = list(map(or_, found, held))
        return found

    def derived_node(self, node_id: str) -> DerivedNode | None:
        """``derived.get(node_id)``; the held columns' nodes made only where it is one of
        theirs."""
        node = self._derived.get(node_id)
        if node is None and self._held and any(node_id in ids for _, ids, _ in self._held):
            return self.derived[node_id]
        return node

    @property
    def g(self) -> Any:
        """The graph as networkx (node attribute ``kind``, ``op``, ...), for algorithms/pictures."""
        return self.ir.nx()

    # ---- node creation ------------------------------------------------------------------
    def source(self, path: str, tensor: torch.Tensor,
               layout: tuple[Any, ...] | None = None) -> NodeRef:
        """The node of the source at ``path`` (made on first use). ``layout``: ``tensor``'s
        (class, shape, stride, dtype, device) when the caller already proved it
        (:func:`derivgraph.compiler.reads.layout`), taken instead of reading the tensor.
        A node that was there already (a source, a derived tensor) is :attr:`touched`."""
        if self.place_source(path, tensor, layout):
            self.touched.add(path)
        return NodeRef(path)

    def place_source(self, path: str, tensor: torch.Tensor,
                     layout: tuple[Any, ...] | None = None) -> bool:
        """As :meth:`source`, nothing touched: whether ``path`` was a node already (a derived
        tensor, or a source made before). The stamped replay's call: it touches what its own
        row did not make (:meth:`derivgraph.compiler.stamp.Stamper._replay`)."""
        nodes = self.ir.nodes
        if path in self.derived_ids or path in nodes:
            return True
        before = len(nodes)
        if layout is None:
            shape, stride = tuple(tensor.shape), tuple(tensor.stride())
            dtype, device = tensor.dtype, tensor.device
        else:
            _, shape, stride, dtype, device = layout
        self.ir.add(Node(path, _SOURCE, None, (), {}, (), shape, stride, dtype, device))
        self._added(before, 1, (path,))
        self.read_sources[path] = tensor
        return False

    def op(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> NodeRef:
        """The op node of ``name`` over ``args``/``kwargs`` (CSE-shared); it and every node
        it reads are :attr:`touched`."""
        refs = refs_in(args) + refs_in(kwargs)
        node_id = self.op_keyed(name, args, kwargs, (name, freeze(args), freeze(kwargs)), refs)
        self.touched.update(refs)
        self.touched.add(node_id)
        return NodeRef(node_id)

    def op_keyed(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], key: Any,
                 refs: list[str]) -> str:
        """The op node of ``key`` (``(name, freeze(args), freeze(kwargs))``; ``refs``: the
        node ids in ``args`` then ``kwargs``): the one CSE already holds, or a new one
        (numbered ``%N:name``, N counting up: :meth:`made_after`). Nothing touched: the
        caller accounts for what it names (:meth:`op`, the stamped replay)."""
        node_id = f"%{self._op_count + 1}:{name}"  # the new node's id, if it is new
        if self._cse_due:
            self._settle_cse()
        hit = self._cse_table.setdefault(key, node_id)  # one hash of the key, hit or not
        if hit is not node_id:
            self.cse_hits += 1
            return hit
        self._op_count += 1
        before = len(self.ir.nodes)
        self.ir.add(Node(node_id, _OP, name, args, kwargs, _unique(refs)))
        self._added(before, 1)
        self.op_names.add(name)
        return node_id

    @property
    def _cse(self) -> dict[Any, str]:
        """The CSE table (op key -> op node id), every due run's keys added
        (:meth:`add_made`)."""
        if self._cse_due:
            self._settle_cse()
        return self._cse_table

    @_cse.setter
    def _cse(self, table: dict[Any, str]) -> None:
        if self._cse_due:
            self._settle_cse()
        self._cse_table = table

    def _settle_cse(self) -> None:
        """Add every due run's keys to the CSE table, runs in the order they were made."""
        due, self._cse_due = self._cse_due, []
        for keys in due:
            self._cse_table.update(keys())

    def add_made(self, ids: list[str], nodes: list[Node] | None,
                 users: list[list[str]] | Sequence[HeldColumn],
                 sources: list[tuple[str, torch.Tensor]],
                 ops: int | list[tuple[Any, str]],
                 names: set[str],
                 keys: Callable[[], Iterable[tuple[Any, str]]] | None = None,
                 id_set: Set[str] | None = None) -> None:
        """What :meth:`place_source` and :meth:`op_keyed` leave for a run of new nodes, in
        order: ``nodes`` (sources and ops, none a node yet, no id with users yet, every
        input one of them made before it) with their ``ids`` and their ``users`` lists
        (:meth:`Graph.add_fresh <derivgraph.compiler.ir.Graph.add_fresh>`), ``sources``
        (each source's path and tensor), ``ops`` (each op's CSE key, new, and id, numbered
        on from :meth:`op_count`; or how many ops, their pairs given by ``keys()`` when the
        table is next read: each key new, none of them read before), ``names`` (their
        ops). ``nodes`` None: they are the held columns ``users``' rows, held by them
        (``id_set``: the set of ``ids``, where the caller made it)."""
        before = len(self.ir.nodes)
        self.ir.add_fresh(ids, nodes, users, id_set)
        self._added(before, len(ids) if nodes is None else len(nodes), map(_FIRST, sources))
        self.read_sources.update(sources)
        if isinstance(ops, int):
            assert keys is not None
            self._cse_due.append(keys)
            self._op_count += ops
        else:
            self._cse.update(ops)
            self._op_count += len(ops)
        self.op_names.update(names)

    def is_fresh(self, ids: list[str], fresh: set[str] | None = None) -> bool:
        """Whether no id of ``ids`` is a node or a derived tensor or has users, none twice:
        one sweep of the users' keys, which hold every node's id (each add gives a node
        its users list), every derived tensor's being a node's (:meth:`add_derived`).
        ``fresh``: the set of ``ids``, where the caller made it."""
        if fresh is None:
            fresh = set(ids)
        return len(fresh) == len(ids) and self.ir.users.keys().isdisjoint(fresh)

    def op_count(self) -> int:
        """How many op nodes were made so far (the next one is numbered one more)."""
        return self._op_count

    @staticmethod
    def made_after(op_id: str, count: int) -> bool:
        """Whether op node ``op_id`` was made after :meth:`op_count` gave ``count``."""
        return int(op_id[1:op_id.index(":")]) > count

    def add_derived(self, node: DerivedNode) -> None:
        if self._held:  # their nodes first: the order is the adds'
            self.derived  # noqa: B018
        self._derived[node.id] = node
        before = len(self.ir.nodes)
        self.ir.add(Node(node.id, _DERIVED))
        self._added(before, 1)

    def add_derived_all(self, nodes: list[DerivedNode], ids: list[str] | None = None,
                        columns: list[list[str]] | None = None,
                        id_set: Set[str] | None = None) -> None:
        """:meth:`add_derived` of each node, in order (``ids``: their ids, where the caller
        has them; ``id_set``: the set of ``ids``, where the caller made it). ``columns``:
        ``ids`` are these columns' ids a row at a time (every column as long,
        ``ids[k::len(columns)]`` column ``k``); their graph nodes are then held by column
        (:class:`~derivgraph.compiler.ir.HeldLeaves`), each made on first use."""
        if ids is None:
            ids = [node.id for node in nodes]
        if self._held:  # their nodes first: the order is the adds'
            self.derived  # noqa: B018
        self._derived.update(zip(ids, nodes))
        self._add_leaves(ids, columns, id_set)

    def hold_derived(self, held: list[HeldDerived], ids: list[str],
                     id_set: Set[str] | None = None) -> None:
        """:meth:`add_derived_all` of the columns ``held`` (every one as long; ``ids``:
        their ids a row at a time, ``ids[k::len(held)]`` column ``k``'s; ``id_set``: their
        set, where the caller made it), their nodes not made: the held runs' nodes are made
        and put in at the first read that needs one (:attr:`derived`, :meth:`derived_node`,
        an add after them), in this order after every node made before."""
        if held:
            self._held.append((ids, set(ids) if id_set is None else id_set, held))
        self._add_leaves(ids, [column.ids for column in held], id_set)

    def _add_leaves(self, ids: list[str], columns: list[list[str]] | None,
                    id_set: Set[str] | None) -> None:
        """The graph nodes of derived tensors ``ids`` (see :meth:`add_derived_all`)."""
        before = len(self.ir.nodes)
        if columns:
            leaves = [HeldLeaves(column, _DERIVED) for column in columns]
            for column in leaves:
                column.hold(_DERIVED)
            self.ir.add_leaves(None, ids, leaves, id_set)  # held by column where fresh
        else:
            self.ir.add_leaves(list(map(Node, ids, repeat(_DERIVED))), ids, (), id_set)
        self._added(before, len(ids))

    def _added(self, before: int, count: int, sources: Iterable[str] = ()) -> None:
        """Keep :meth:`sources`' running list after this class's add of ``count`` nodes,
        ``sources`` among them (in order), to a graph of ``before`` nodes: still complete where
        it was complete before (every IR add since was one of this class's) and the add made
        ``count`` new nodes (none replaced one, so no source was lost); else it is stale until
        :meth:`sources` sweeps the nodes again."""
        ir = self.ir
        if self._source_adds == ir.added - count and len(ir.nodes) == before + count:
            self._source_ids += sources
            self._source_adds = ir.added
        else:  # no count of the IR's adds matches it: swept again
            self._source_adds = -1

    def set_input(self, node: DerivedNode, value_id: str) -> None:
        """Give ``node`` its value's node, which is :attr:`touched`."""
        self.place_input(node, value_id)
        self.touched.add(value_id)

    def place_input(self, node: DerivedNode, value_id: str) -> None:
        """As :meth:`set_input`, nothing touched."""
        node.input = value_id
        self.ir.set_inputs(node.id, (value_id,))

    def place_inputs(self, values: list[tuple[DerivedNode, str]]) -> None:
        """:meth:`place_input` of each (node, value id), in order (the stamped replay's
        call)."""
        if values:
            nodes, value_ids = zip(*values)
            self.place_input_each(list(nodes), list(value_ids))

    def place_input_each(self, nodes: list[DerivedNode], values: list[str]) -> None:
        """:meth:`place_input` of each node of ``nodes`` and its value id in ``values``, in
        order."""
        if len(nodes) != len(values):
            raise ValueError("one value per node")
        deque(map(setattr, nodes, repeat("input"), values), maxlen=0)  # one C-level sweep
        self.ir.set_input_each(list(map(_ID, nodes)), values)

    def place_made_inputs(self, nodes: list[DerivedNode] | HeldDerived, ids: list[str],
                          values: list[str]) -> None:
        """What :meth:`place_input_each` leaves for ``nodes`` (their ``ids``; or a held
        column, :class:`HeldDerived`, whose rows they are) and ``values``
        where no node has an input yet (:meth:`Graph.without_inputs
        <derivgraph.compiler.ir.Graph.without_inputs>`) and each value's users list already
        names its nodes in order (:meth:`Graph.add_fresh
        <derivgraph.compiler.ir.Graph.add_fresh>`, built by the caller): the inputs set,
        the users lists not touched."""
        if len(nodes) != len(values):
            raise ValueError("one value per node")
        if type(nodes) is HeldDerived:  # a held column takes them as a column
            nodes.set_inputs(values)
        else:
            deque(map(setattr, nodes, repeat("input"), values), maxlen=0)  # one C sweep
        self.ir.set_fresh_inputs(ids, values)

    def place_column_inputs(self, columns: list[list[DerivedNode] | HeldDerived],
                            ids: list[list[str]], values: list[list[str]]) -> None:
        """:meth:`place_input_each` of the nodes of ``columns`` (their ids ``ids``, each
        column's values in ``values``) a row at a time, each row's in column order; a held
        column (:class:`HeldDerived`) takes its values as a column."""
        rows = chain.from_iterable
        if all(type(c) is HeldDerived and c.made is None for c in columns):
            if any(len(v) != len(c) for c, v in zip(columns, values, strict=True)):
                raise ValueError("one value per node")
            for column, column_values in zip(columns, values):
                column.set_inputs(column_values)  # type: ignore[union-attr]
            self.ir.set_input_each(list(rows(zip(*ids))), list(rows(zip(*values))))
            return
        nodes = [c.nodes() if type(c) is HeldDerived else c for c in columns]
        self.place_input_each(list(rows(zip(*nodes))), list(rows(zip(*values))))

    def issue(self, rule: str, message: str, fix: str, node: DerivedNode | None) -> None:
        loc = node.decl.location if node else SourceLocation()
        self.issues.append(SpecIssue(rule, message, fix, loc, node.id if node else ""))

    # ---- queries ------------------------------------------------------------------------
    def kind(self, node_id: str) -> NodeKind:
        return self.ir.nodes[node_id].kind

    def sources(self) -> list[str]:
        """The source node ids, in insertion order: the list kept as nodes are added
        (:meth:`_added`) where it is complete, else one sweep of the nodes (then kept again)."""
        ir = self.ir
        if self._source_adds != ir.added:  # a node added or replaced another way
            self._source_ids = [n for n, d in ir.nodes.items() if d.kind is _SOURCE]
            self._source_adds = ir.added
        return list(self._source_ids)

    def ordered(self) -> list[str]:
        """Node ids in a deterministic topological order (cached until the graph changes)."""
        return self.ir.order()

    def source_deps(self) -> dict[str, frozenset[str]]:
        """Node id -> the source nodes it depends on (one topological sweep, cached); the
        closed stamped rows, when the graph's proof of them is current
        (:func:`~derivgraph.compiler.layers.closed_layers`), read off their template by
        position (:func:`~derivgraph.compiler.row_deps.row_source_deps`; their sources' and
        ops' columns put in on first need, :class:`~derivgraph.compiler.row_deps.SourceDeps`),
        the sweep over the rest (which it checks the order of: every input before its user):
        the order cut at those rows' spans where it can be (:meth:`unspanned`), else
        filtered."""
        if self._deps_version != self.ir.version:
            nodes = self.ir.nodes
            version, tables = self.layer_cache  # closed stamped rows: read by position
            rows: list[Any] = []  # the tables whose rows were read
            deps = row_source_deps(nodes, tables, rows) \
                if version == self.ir.version and tables else SourceDeps()
            empty: frozenset[str] = frozenset()
            walked = self.unspanned(rows) if rows else None
            if walked is None:
                order = self.ordered()
                if rows:  # every row's set put in, then its keys read at C speed
                    deps.complete()
                    known = dict.keys(deps)
                    walked = [n for n in order if n not in known]
                else:
                    walked = order
            try:  # the sweep reads each input before its user: it also checks the order
                for n in walked:
                    node = nodes[n]
                    if node.kind is NodeKind.SOURCE:
                        deps[n] = frozenset((n,))
                    elif len(node.inputs) == 1:
                        deps[n] = deps[node.inputs[0]]
                    else:
                        deps[n] = empty.union(*(deps[p] for p in node.inputs))
            except KeyError:  # the first node of the sweep without a set
                late = next(n for n in walked if not dict.__contains__(deps, n))
                raise SpecValidationError([self._misordered(late, deps)]) from None
            self._deps, self._deps_version = deps, self.ir.version
        return self._deps

    def unspanned(self, tables: Sequence[Any]) -> list[str] | None:
        """The order without every node of ``tables``' rows (closed instance tables), cut out
        where the order's spans emitted them (:meth:`Graph.spanned
        <derivgraph.compiler.ir.Graph.spanned>`): when the spans were made of these tables
        (:attr:`span_cache`: the same table objects, in the same order), for the current
        order, and hold as many nodes as their rows (each a row's node, none twice: so every
        one). None else."""
        version, spanned_tables = self.span_cache
        chunks = self.ir.spanned()
        if not chunks or version != self.ir.version or spanned_tables is None or \
                len(spanned_tables) != len(tables) or not all(map(is_, spanned_tables, tables)) \
                or sum(stop - start for start, stop in chunks) != \
                sum(len(t.rows) * len(t.template) for t in tables):
            return None
        order, at, rest = self.ordered(), 0, []
        for start, stop in chunks:
            rest += order[at:start]
            at = stop
        return rest + order[at:]

    def _misordered(self, n: str, seen: dict[str, Any]) -> SpecIssue:
        """The issue for node ``n`` of the order, whose input is not in ``seen`` (comes after
        it: a compiler bug, stamped rows take their template's walk only where a proof
        allows)."""
        late = next(p for p in self.ir.nodes[n].inputs if p not in seen)
        decl = self.derived.get(n)
        return SpecIssue(Rule.INFERENCE, f"the compile's topological order reaches {n} before "
                         f"its input {late}", "report this as a derivgraph bug; "
                         "DERIVGRAPH_STAMP=0 compiles each layer on its own",
                         decl.decl.location if decl is not None else SourceLocation(), n)

    def raise_if_issues(self) -> None:
        if self.issues:
            raise SpecValidationError(self.issues)
