"""Where the tensors of the pass live: derived storage, sources, views, stages and constants.

:class:`BoundTensors` resolves every tensor the pass reads or writes once, at compile (and again
only when a holder was rebuilt); it is the :class:`~derivgraph.compiler.lower.LowerContext` the
compiler lowers against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, islice, repeat
from operator import attrgetter, is_, not_
from typing import Any

import torch

from derivgraph.addresses import AtAddresses
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler.graph import DerivedGraph, NodeRef, refs_in
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.interpret import Interpreter
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.layers import closed_layers, order_without_rows
from derivgraph.compiler.owners import PathReader
from derivgraph.ops import OPS, OpKind
from derivgraph.runtime.accessors import column_read
from derivgraph.runtime.entry import (
    ColumnRows,
    Entry,
    EntryTable,
    HeldRows,
    TableColumn,
    entry_list,
    keeps_startup,
)

__all__ = ["BoundTensors", "BoundViews", "may_view", "view_candidates"]

_UNSET = object()
_OP, _STORAGE = attrgetter("op"), attrgetter("storage")
_STARTUP_PTR = attrgetter("startup_ptr")
#: dtypes whose NumPy view's ``tolist`` gives the very Python numbers torch's ``tolist`` gives
#: (each element converted exactly to a Python float, int or bool)
_NUMPY_TOLIST = frozenset({torch.float32, torch.float64, torch.int64, torch.int32, torch.int16,
                           torch.int8, torch.uint8, torch.bool})


def _restorable(entries: list[Entry],
                rows: Sequence[tuple[slice, TableColumn]] = ()) -> bytes:
    """Per entry, 1 where it keeps startup data (a refill may re-point it: its storage is in
    :meth:`BoundTensors.startup_addresses`, by the same rule: :func:`keeps_startup`, given
    ``rows``: its columns' rows among ``entries``), else 0."""
    return bytes(keeps_startup(entries, rows))


def _storages(entries: Mapping[str, Entry]) -> list[Any]:
    """Every entry's storage in order (one sweep; a :class:`HeldRows`' by
    :meth:`~derivgraph.runtime.entry.HeldRows.read`: no row's entry made)."""
    if type(entries) is HeldRows:
        return entries.read("storage")
    return list(map(_STORAGE, entries.values()))


def host_tolist(buffer: torch.Tensor) -> Callable[[], list[Any]]:
    """``buffer.tolist`` as a call that reads its current elements: for a contiguous CPU buffer
    of a dtype of :data:`_NUMPY_TOLIST`, its NumPy view's ``tolist`` (the same memory, the same
    numbers; NumPy's code is warm from the reload's address gathers where torch's ``tolist``
    is cold after an engine's reload: about half the time in situ), else torch's. The buffer
    must keep its storage for life (a stage buffer: written in place by the pass only)."""
    if buffer.device.type == "cpu" and buffer.dtype in _NUMPY_TOLIST \
            and buffer.is_contiguous() and not buffer.requires_grad:
        return buffer.numpy().tolist
    return buffer.tolist


def _sources_of(sources: list[str], model: Any, read: Mapping[str, Any] | None) \
        -> dict[str, Any]:
    """Each source path's object, in ``sources``' order: ``read``'s (else read from
    ``model``). The rule: one lookup per path. Where ``read`` is a ``dict`` whose first keys
    are ``sources`` in that order (the compile's startup record: the sources, then the
    folds' entries), its first items are those lookups' answers as they are: one copy."""
    if read is None:
        return dict(zip(sources, map(PathReader(model).get, sources)))
    n = len(sources)
    if type(read) is dict and len(read) >= n and list(islice(read, n)) == sources:
        return dict(read) if len(read) == n else dict(islice(read.items(), n))
    return dict(zip(sources, map(read.__getitem__, sources)))


class BoundViews(Interpreter):
    """Every view op over a bound tensor, made once over that tensor's storage."""

    def __init__(self, graph: DerivedGraph, bound: Mapping[str, Any]):
        super().__init__(graph)
        self.env.update(bound)

    def views(self, looked_at: list[str] | None = None) -> dict[str, torch.Tensor]:
        """Every view op node over a bound tensor (or an earlier view), in order -> its view;
        ``looked_at``: :func:`view_candidates` of the graph, when the caller has it."""
        out: dict[str, torch.Tensor] = {}
        nodes = self.graph.nodes
        for node_id in view_candidates(self.graph) if looked_at is None else looked_at:
            node = nodes[node_id]
            if node.kind is NodeKind.OP and OPS[node.op].kind is OpKind.VIEW \
                    and len(refs_in(node.args)) == 1 and node.inputs[0] in self.env:
                out[node_id] = self.env[node_id] = self.run_node(node)
        return out

    def source(self, node: Node) -> Any:
        raise KeyError(node.id)  # only views over bound tensors are made here


def _not_views() -> frozenset[str]:
    """The registered ops that are no view op (read now: ops can be registered later)."""
    return frozenset(name for name, op in OPS.items() if op.kind is not OpKind.VIEW)


def may_view(graph: DerivedGraph) -> bool:
    """Whether :meth:`BoundViews.views` can find a node to look at: an op of
    ``graph.op_names`` (the op of every op node the graph made) that is a view op or no
    registered op. False: it returns no view whatever its tensors (nothing to bind)."""
    return not graph.op_names <= _not_views()


def view_candidates(graph: DerivedGraph) -> list[str]:
    """The nodes :meth:`BoundViews.views` looks at, in order: every node but those of a
    registered non-view op (or no op).

    A closed stamped row (:func:`~derivgraph.compiler.layers.closed_layers`) has its
    template's kinds and ops position by position: where the template has no view op, no node
    of the row is one, and the row is not looked at (the order without those rows:
    :func:`~derivgraph.compiler.layers.order_without_rows`, cut at the order's spans where it
    can)."""
    nodes = graph.nodes
    other = _not_views()
    tables = closed_layers(graph)
    order = order_without_rows(graph, [t for t in tables if not _has_view(nodes, t, other)])
    # the ops read in one C-level sweep
    ops = map(_OP, map(nodes.__getitem__, order))
    return list(compress(order, map(not_, map((other | {None}).__contains__, ops))))


def _has_view(nodes: Mapping[str, Node], table: InstanceTable, other: frozenset[str]) -> bool:
    """Whether a node of ``table``'s template has an op not in ``other`` (a view op)."""
    return any(nodes[t].op not in other for t in table.template
               if nodes[t].kind is NodeKind.OP)


class BoundTensors:
    """The tensors bound at compile; implements :class:`~derivgraph.compiler.lower.LowerContext`.
    """

    def __init__(self, graph: DerivedGraph, entries: dict[str, Entry],
                 table: EntryTable | None = None):
        self.graph = graph
        self.entries = entries
        # the table whose ``by_id`` ``entries`` is (its columns' rows among them), if any
        self._table = table if table is not None and table.by_id is entries else None
        self.meta_env: dict[str, Any] = {}
        self.sources: dict[str, torch.Tensor] = {}
        self.views: dict[str, torch.Tensor] = {}
        self.stages: dict[str, torch.Tensor] = {}  # derived Python scalars, staged
        self.stage_groups: list[tuple[torch.Tensor, list[str]]] = []  # one buffer, its stages
        self.constants: dict[str, torch.Tensor] = {}  # op nodes no source feeds: made at compile
        self._layouts: ColumnLayouts | None = None
        # the tensors a refill may re-point, at their startup addresses
        self._startup: AtAddresses | None = None
        # which of the entries (in order) hold its tensors, as it was made (:func:`_restorable`)
        self._startup_mask: bytes | None = None
        #: the run now starting proved them there (``Plan.run``: its source check's joint
        #: address check); :meth:`restore_storage` takes that proof once
        self.at_startup = False
        # the storage addresses a compile's readers read of runs of refs, while ``layouts``
        # is set (:func:`~derivgraph.compiler.lower_layers.column_addresses`): cleared whenever
        # tensors are bound or staged again, and when ``layouts`` is set
        self.address_memo: dict[tuple[str, ...], list[int | None] | None] = {}
        # by targets: the stage buffers they fill whole, each with its stages' entries
        self._stage_rows: dict[tuple[str, ...],
                               list[tuple[Callable[[], list[Any]], list[str], list[Entry]]]
                               | None] = {}

    @property
    def layouts(self) -> ColumnLayouts | None:
        """The entry columns' layout records, during the compile only (``planner._compile``
        sets it, then None); setting it drops what was kept for a compile's readers."""
        return self._layouts

    @layouts.setter
    def layouts(self, book: ColumnLayouts | None) -> None:
        self._layouts = book
        self._forget()

    def _forget(self) -> None:
        """Drop the kept addresses (a bound value may change)."""
        self.address_memo = {}

    def bind(self, model: Any, read: Mapping[str, Any] | None = None) -> None:
        """Resolve the sources, then every view over a bound tensor.

        ``read``: the object at every source path of ``model`` as it is now (read by the
        caller with :class:`PathReader`, nothing written since); else each is read here."""
        self.sources = _sources_of(self.graph.sources(), model, read)
        self._startup = None
        self._forget()
        # no view op in the graph, or none outside the rows proven to have none: no view to
        # make, and the bound tensors need not be gathered
        looked_at = view_candidates(self.graph) if may_view(self.graph) else []
        if not looked_at:
            self.views = {}
            return
        bound: dict[str, Any] = {**self.sources, **self.constants}
        storages = _storages(self.entries)  # the bound tensors, one sweep
        bound.update(compress(zip(self.entries, storages),
                              map(isinstance, storages, repeat(torch.Tensor))))
        self.views = BoundViews(self.graph, bound).views(looked_at)

    # ---- LowerContext ----------------------------------------------------------------------
    def bound(self, ref: str) -> Any:
        if ref in self.sources:
            return self.sources[ref]
        if ref in self.entries:
            return self.entries[ref].storage
        for table in (self.views, self.stages, self.constants):
            if ref in table:
                return table[ref]
        raise KeyError(ref)

    def bound_values(self, refs: Iterable[str], missing: Any = None) -> list[Any]:
        """:meth:`bound` of each ref, ``missing`` where nothing is bound: one C-level sweep per
        table, in :meth:`bound` 's order (the refs of one column of stamped layers are usually
        all sources, or all derived tensors)."""
        refs = list(refs)
        # no source: one table, usually. A run starting at an entry needs no sweep of the
        # sources to say so where the entries bind it all: an entry's id is a derived node's,
        # a source's a source node's, and one graph has one node per id
        if (refs and refs[0] in self.entries) or self.sources.keys().isdisjoint(refs):
            whole = self._one_table(refs, missing)
            if whole is not None:
                return whole
        out = list(map(self.sources.get, refs, repeat(_UNSET)))
        if not any(map(is_, out, repeat(_UNSET))):
            return out  # all sources
        todo = [i for i, value in enumerate(out) if value is _UNSET]
        if todo:
            found = list(map(self.entries.get, [refs[i] for i in todo]))
            for i, entry in zip(todo, found):
                if entry is not None:
                    out[i] = entry.storage
            todo = [i for i, entry in zip(todo, found) if entry is None]
        for table in (self.views, self.stages, self.constants):
            if not todo:
                break
            found = list(map(table.get, [refs[i] for i in todo], repeat(_UNSET)))
            for i, value in zip(todo, found):
                out[i] = value
            todo = [i for i, value in zip(todo, found) if value is _UNSET]
        for i in todo:
            out[i] = missing
        return out

    def _one_table(self, refs: list[str], missing: Any) -> list[Any] | None:
        """:meth:`bound_values` of ``refs`` (none a source) when the first table after the
        sources that binds any of them binds them all, or none binds any (a column of stamped
        layers, usually): one sweep per table; else None. ``refs`` that are the ids of an
        entry column whose rows the table holds by column (equal, in order; its
        :class:`~derivgraph.runtime.entry.ColumnRows`) are answered by its rows' storages (a
        made row's read from its entry: a row written after the compile binds as written),
        no other entry read."""
        if self._table is not None:  # (a column's ids are entries': the table binds them)
            for _, column in self._table.rows:
                if type(column.entries) is ColumnRows and column.ids == refs:
                    return column.entries.read("storage")
        for table in (self.entries, self.views, self.stages, self.constants):
            if not table or table.keys().isdisjoint(refs):  # (an empty table: no sweep)
                continue
            values = list(map(table.get, refs, repeat(_UNSET)))
            if any(map(is_, values, repeat(_UNSET))):
                return None
            return list(map(_STORAGE, values)) if table is self.entries else values
        return [missing] * len(refs)  # nothing bound at any of them

    def storage_of(self, node_id: str) -> Any:
        return self.entries[node_id].storage

    def stage(self, target: str) -> torch.Tensor:
        return self.stages[target]

    def meta_of(self, ref: Any) -> torch.Tensor | None:
        ref_id = ref.id if isinstance(ref, NodeRef) else ref
        meta = self.meta_env.get(ref_id) if isinstance(ref_id, str) else None
        return meta if isinstance(meta, torch.Tensor) else None

    def storage_ptrs(self, ref: str) -> set[int]:
        try:
            value = self.bound(ref)
        except KeyError:
            return set()
        if isinstance(value, torch.Tensor) and not value.is_meta:
            return {value.untyped_storage().data_ptr()}
        return set()

    # ---- derived Python scalars -------------------------------------------------------------
    def alloc_stages(self, values: dict[str, torch.Tensor]) -> None:
        """A staging tensor per derived Python scalar shaped like its value (target -> value):
        the one-element ones of a dtype and device are the elements of one buffer, read back
        to the host in one transfer (:meth:`staged`)."""
        by_kind: dict[tuple[torch.dtype, torch.device], list[str]] = {}
        if values or self.stages:  # a bound value may change: read again
            self._forget()
        self.stages, self.stage_groups, self._stage_rows = {}, [], {}
        for target, value in values.items():
            if value.dim() == 0:
                by_kind.setdefault((value.dtype, value.device), []).append(target)
            else:
                self.stages[target] = torch.empty_like(value)
        for (dtype, device), targets in by_kind.items():
            buffer = torch.empty(len(targets), dtype=dtype, device=device)
            self.stage_groups.append((buffer, targets))
            self.stages.update((t, buffer[i]) for i, t in enumerate(targets))

    def staged(self, targets: list[str]) -> dict[str, Any]:
        """The Python numbers staged for ``targets``: one ``tolist()`` per buffer."""
        wanted = set(targets)
        out: dict[str, Any] = {}
        for buffer, group in self.stage_groups:
            if not wanted.isdisjoint(group):
                out.update(zip(group, buffer.tolist()))
        for target in targets:
            if target not in out:
                out[target] = self.stages[target].item()
        return out

    def staged_if_changed(self, targets: list[str]) -> dict[str, Any] | None:
        """:meth:`staged`, or None when every staged number of ``targets`` equals (``==``) the
        value its entry holds, which the per-target compare of
        :meth:`~derivgraph.runtime.plan.Plan` then needs not run (it would set nothing): one
        ``tolist()`` per buffer either way. A NaN (never equal) answers the numbers; so do
        targets that do not fill their buffers whole, read by :meth:`staged`."""
        key = tuple(targets)
        rows = self._stage_rows.get(key, False)
        if rows is False:
            rows = self._stage_rows[key] = self._rows_of(key)
        if rows is None:
            return self.staged(targets)
        read, same = [], True  # a loop, no comprehension: no frame made on every reload
        for tolist, _group, entries in rows:
            values = tolist()
            read.append(values)
            same = same and values == list(map(_STORAGE, entries))
        if same:
            return None
        return {t: v for values, (_b, group, _e) in zip(read, rows) for t, v in zip(group, values)}

    def _rows_of(self, targets: tuple[str, ...]) \
            -> list[tuple[Callable[[], list[Any]], list[str], list[Entry]]] | None:
        """The stage buffers ``targets`` fill whole, each as its :func:`host_tolist` with its
        stages and their entries in buffer order; None when a target is outside them or a
        buffer only partly among them."""
        wanted = set(targets)
        groups = [(buffer, group) for buffer, group in self.stage_groups
                  if not wanted.isdisjoint(group)]
        covered = [t for _b, group in groups for t in group]
        if len(covered) != len(wanted) or wanted.symmetric_difference(covered):
            return None
        return [(host_tolist(buffer), group, [self.entries[t] for t in group])
                for buffer, group in groups]

    # ---- startup storage -------------------------------------------------------------------
    def restore_storage(self) -> list[str]:
        """Put startup storage back under tensors the engine re-pointed (``t.data = new``).

        Nothing re-pointed (the common case) is proven by :meth:`AtAddresses.intact
        <derivgraph.addresses.AtAddresses.intact>` (one gather of storage words, else the
        addresses compared), or by this run's source check (:attr:`at_startup`, taken once:
        nothing runs between that check and this, the entry function's first statement)."""
        proven, self.at_startup = self.at_startup, False
        if proven or self.startup_addresses().intact():
            return []
        restored = []
        keeps = keeps_startup(self.entries.values())
        for (key, entry), kept in zip(self.entries.items(), keeps):
            if not kept or entry.storage.data_ptr() == entry.startup_ptr:
                continue
            entry.storage.data = entry.startup_alias()
            restored.append(key)
        return restored

    def startup_addresses(self) -> AtAddresses:
        """The derived tensors a refill may re-point, at their startup addresses (made once)."""
        held = self._startup
        if held is None:
            entries = entry_list(self.entries)  # (an entry made where read)
            rows = () if self._table is None else self._table.rows
            mask = self._startup_mask = _restorable(entries, rows)
            # each entry's storage and startup address, an entry column's rows' from the
            # column (its facts: the lists its rows' entries hold), the rest read; then the
            # kept entries' (one C-level sweep each)
            storages = column_read(entries, _STORAGE, [(span, c.storages) for span, c in rows])
            ptrs = column_read(entries, _STARTUP_PTR, [
                (span, c.ptrs) for span, c in rows
                if c.ptrs is not None and len(c.ptrs) == len(c.ids)])
            held = self._startup = AtAddresses(list(compress(storages, mask)),
                                               list(compress(ptrs, mask)))
        return held

    def take_startup_words(self, proven: AtAddresses, entries: list[Entry]) -> bool:
        """Give :meth:`startup_addresses` its words from ``proven``'s, a check of ``entries``'
        storages at their startup addresses whose words are taken, where those entries hold
        every one of its tensors (:meth:`AtAddresses.take_words
        <derivgraph.addresses.AtAddresses.take_words>`: no word read). Whether given.

        The mask of ``entries`` is first the one :meth:`startup_addresses` was made with (its
        entries', where as many: the plan's holder table holds every entry, in order), not
        read again: ``take_words`` proves any mask it accepts (the marked tensors are this
        check's very tensors, in order, at its addresses); one it refuses is made from
        ``entries`` (:func:`_restorable`)."""
        startup = self.startup_addresses()
        mask = self._startup_mask
        if mask is not None and len(mask) == len(entries) and startup.take_words(proven, mask):
            return True
        return startup.take_words(proven, _restorable(entries))
