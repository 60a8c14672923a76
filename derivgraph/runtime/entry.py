"""Where a derived tensor lives: its node, its startup storage, and the slot it is held in."""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import (
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    Set,
    ValuesView,
)
from itertools import chain, compress, count, repeat
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

import torch

from derivgraph.addresses import address_of
from derivgraph.compiler.graph import DerivedNode, HeldDerived
from derivgraph.paths import Slot
from derivgraph.spec.kinds import TensorKind

__all__ = ["ColumnRows", "Entry", "EntryTable", "HeldEntries", "HeldRows", "ProvenColumn",
           "RowEntry", "StartupColumn", "TableColumn", "address_of", "entry_list",
           "keeps_startup", "nbytes_of", "not_taken", "span_of", "write_rows"]


class Entry:
    """A derived tensor bound to its owner, with the storage it keeps for life; ``id`` and
    ``owner_path`` are its node's (read once: a node's id and owner path never change)."""

    __slots__ = ("node", "id", "owner_path", "storage", "slot", "adopted", "startup_ptr",
                 "startup_data")

    def __init__(self, node: DerivedNode, storage: Any, slot: Slot | str, adopted: bool):
        self.node = node
        self.id = node.id
        self.owner_path = node.owner_path
        self.storage = storage
        self.slot = slot if type(slot) is Slot else Slot(slot)
        self.adopted = adopted
        self.startup_ptr = 0
        # a detached alias of the startup storage (None: none kept), or an entry column's
        # :class:`StartupColumn` (its rows' one record) until :meth:`startup_alias` first reads it
        self.startup_data: Any = None

    def startup_alias(self) -> Any:
        """The detached alias of the startup storage (None: none kept). A
        :class:`StartupColumn` answers this entry's row (:meth:`StartupColumn.alias`), and
        that alias is kept."""
        data = self.startup_data
        if type(data) is StartupColumn:
            data = self.startup_data = data.alias(self.id)
        return data

    def nbytes(self) -> int:
        return nbytes_of(self.storage)


def nbytes_of(storage: Any) -> int:
    """The bytes a derived tensor's storage holds (0: not a tensor)."""
    return storage.numel() * storage.element_size() if isinstance(storage, torch.Tensor) else 0


class RowEntry(Entry):
    """An :class:`Entry` of row ``row`` of a held column of the graph
    (:class:`~derivgraph.compiler.graph.HeldDerived` ``column``) whose :attr:`node` is made
    where it is first read: the column's row node
    (:meth:`~derivgraph.compiler.graph.HeldDerived.nodes`, made for the whole column once:
    the very node the graph holds). Its ``id`` and ``owner_path`` are the column's lists'
    (what the node is made with). Otherwise an :class:`Entry`."""

    __slots__ = ("column", "row")

    def __init__(self, column: HeldDerived, row: int, id: str, owner_path: str,
                 storage: Any, slot: Slot, adopted: bool):
        self.column, self.row = column, row
        self.id, self.owner_path = id, owner_path
        self.storage = storage
        self.slot = slot
        self.adopted = adopted
        self.startup_ptr = 0
        self.startup_data: Any = None

    def __getattr__(self, name: str) -> Any:
        """The node, on its first read (an unset slot's read comes here)."""
        if name != "node":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        node = self.node = self.column.nodes()[self.row]
        return node


_STARTUP_DATA = operator.attrgetter("startup_data")


def keeps_startup(entries: Iterable[Entry],
                  rows: Sequence[tuple[slice, TableColumn]] = ()) -> list[bool]:
    """Per entry, whether it keeps its startup storage (:attr:`Entry.startup_data` set): the
    one rule of which derived tensors a refill may re-point back (one C-level sweep).

    ``rows``: entry columns with their rows' positions in ``entries`` (a list: the caller's
    proof, :attr:`EntryTable.rows` of the table whose entries these are, in order). A
    column whose :attr:`~TableColumn.kept` says what its startup record wrote to every
    row's :attr:`Entry.startup_data` (True: set; False: none set) answers its rows with that,
    by one slice store, unread; every other entry is read (so a column that recorded
    nothing, or no ``rows``, reads each row)."""
    known = [(span, column.kept) for span, column in rows if column.kept is not None]
    if not known or not isinstance(entries, (list, HeldEntries)):
        return list(map(operator.is_not, map(_STARTUP_DATA, entries), repeat(None)))
    out: list[Any] = [None] * len(entries)
    taken = bytearray(len(entries))
    for span, kept in known:
        n = len(range(*span.indices(len(entries))))
        out[span] = [kept] * n
        taken[span] = b"\x01" * n
    rest = not_taken(taken)
    if rest is None:  # (no column's rows: every entry read)
        rest = list(range(len(entries)))
    deque(map(operator.setitem, repeat(out), rest, map(operator.is_not, map(
        _STARTUP_DATA, map(entries.__getitem__, rest)), repeat(None))), 0)
    return out


_FLIP = bytes([1]) + bytes(255)  # bytearray.translate: 1 where a byte is 0, else 0


def not_taken(taken: bytearray) -> list[int] | None:
    """The positions ``taken`` holds 0 at, ascending: found one by one where they are few (one
    C-level search each), else by one sweep of every position; None where it holds no 1."""
    if 1 not in taken:
        return None
    if taken.count(0) * 64 > len(taken):
        return list(compress(range(len(taken)), taken.translate(_FLIP)))
    out, at = [], taken.find(0)
    while at >= 0:
        out.append(at)
        at = taken.find(0, at + 1)
    return out


class StartupColumn:
    """An entry column's startup storages kept without their detached aliases, one record for
    the whole column: every row's entry's :attr:`Entry.startup_data` is this one object (no
    record per row). ``storages``: each row's storage's ``untyped_storage()`` (held: nothing
    frees them), ``ids``: the rows' ids, both in row order, and ``layout``: the column's
    layout record (:class:`~derivgraph.column_layout.ColumnLayout`: plain tensors off the meta
    device, row-major, allocated fresh so at offset 0). Nothing writes its lists."""

    __slots__ = ("storages", "layout", "ids", "_rows")

    def __init__(self, storages: list[torch.UntypedStorage], layout: Any, ids: list[str]):
        self.storages, self.layout, self.ids = storages, layout, ids
        self._rows: dict[str, int] | None = None  # id -> row, made on the first alias

    def alias(self, id: str) -> torch.Tensor:
        """Row ``id``'s detached alias, made now: a plain tensor over its held storage at
        offset 0 of the record's dtype, shape and row-major strides, on its device (what
        ``detach()`` of the startup storage gave: the record proved that storage's
        layout)."""
        rows = self._rows
        if rows is None:
            rows = self._rows = dict(zip(self.ids, count()))
        layout = self.layout
        return torch.empty(0, dtype=layout.dtype, device=layout.device).set_(
            self.storages[rows[id]], 0, layout.shape)


class ProvenColumn(NamedTuple):
    """A column :func:`~derivgraph.adoption_columns.allocated_rows` or
    :func:`~derivgraph.adoption_columns.alias_rows` took whole: table ``table``'s
    template node ``k`` (its id ``template``), the rows' ids, entries, extras, owners (as
    the reader read them) and owner paths (``paths``: each row's node's, the reader read
    them) in row order, ``decl``: every row's node's declaration (the template node's; read
    without a row's node), and ``nodes``: the rows' nodes, or the held column that makes them
    (its entries then a :class:`ColumnRows`: each row's entry, and its node, made where first
    read), and
    ``storages``: the storages its entries were made holding, in row order, where the reader
    gave them (an alias column's: each row's input's value; else None). Its facts,
    for a reader of the same model with nothing written since: every row's node has the
    template node's declaration (so its kind and name), its entry was made here (not
    adopted, its slot ``slot``), the name is absent on every owner
    (:func:`~derivgraph.paths.absent_on_modules`, a one-hop name) and, for an alias column,
    no row's input is a derived tensor."""

    table: Any
    k: int
    template: str
    ids: list[str]
    entries: Sequence[Entry]
    extras: list[Any]
    owners: list[Any]
    slot: Slot
    paths: list[str]
    decl: Any
    nodes: HeldDerived | list[DerivedNode]
    storages: list[Any] | None = None


class TableColumn(Protocol):
    """What :class:`EntryTable` reads of a column of entries
    (:class:`~derivgraph.runtime.entry_columns.EntryColumn`): its rows' ids, entries and
    storages in row order, their owner paths (``paths``, else None) and their startup
    addresses where recorded (``ptrs``, else None), and whether its startup record set every
    row's startup data (``kept``, :func:`keeps_startup`'s only reader). Its proven facts:
    every row's entry is unadopted, of a held attribute or alias kind (never a scalar), and
    holds the row's id, owner path, storage (and startup address)."""

    ids: list[str]
    entries: Sequence[Entry]  # a list, or a ColumnRows (its rows made where read)
    storages: list[Any]
    paths: list[str] | None
    ptrs: list[int] | None
    #: what its startup record wrote to every row's :attr:`Entry.startup_data` (True: set,
    #: False: none), recorded by the record itself; None: not recorded (read each row)
    kept: bool | None


_STORAGE, _ADOPTED = operator.attrgetter("storage"), operator.attrgetter("adopted")
_KIND = operator.attrgetter("node.kind")


class EntryTable(Mapping[str, Entry]):
    """A plan's derived tensors by id (``Plan.entries``): a read-only :class:`Mapping` in
    the compile's order, made of the stamped layers' entry columns (:meth:`columns`) and the
    other, *generic* entries (:meth:`generic`).

    Readers on the compile and reload paths take a column's answer from the column
    (:meth:`storages`, :meth:`spec_names`, :meth:`adopted`, :meth:`scalars`) instead of
    iterating every entry; a reader that must see every entry (a dump, an audit) iterates the
    mapping. Only the compile fills it (:attr:`by_id`, :meth:`set_columns`); a relayout that
    re-allocates calls :meth:`open_columns`."""

    __slots__ = ("_by_id", "_columns", "_generic", "_rows")

    def __init__(self) -> None:
        self._by_id: Any = {}  # a dict; a HeldRows where the rows are held by column (hold)
        self._columns: tuple[TableColumn, ...] = ()
        self._generic: dict[str, Entry] = self._by_id  # every entry while there is no column
        self._rows: tuple[tuple[slice, TableColumn], ...] = ()

    # ---- the Mapping -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Entry:
        return self._by_id[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, key: object) -> bool:
        return key in self._by_id

    def get(self, key: str, default: Any = None) -> Any:
        return self._by_id.get(key, default)

    def keys(self) -> KeysView[str]:
        return self._by_id.keys()

    def values(self) -> ValuesView[Entry]:
        return self._by_id.values()

    def items(self) -> ItemsView[str, Entry]:
        return self._by_id.items()

    def __repr__(self) -> str:
        return f"EntryTable({len(self._by_id)} entries, {len(self._columns)} columns)"

    @property
    def by_id(self) -> Mapping[str, Entry]:
        """The id -> entry mapping behind the table: a dict the compile fills in its order,
        the plan's own parts read it (at dict speed); nothing else writes it. Once the plan
        holds its columns' rows by column (:meth:`hold`), a :class:`HeldRows`."""
        return self._by_id

    # ---- filled by the compile ---------------------------------------------------------------
    def set_columns(self, columns: Sequence[TableColumn], generic: dict[str, Entry],
                    ids: list[str] | None = None) -> None:
        """``columns``: the stamped columns among the entries; ``generic``: every other entry
        in the table's order (the caller's partition of :attr:`by_id`). ``ids``: the keys of
        :attr:`by_id` in order, where the caller has them (:attr:`rows` found in them)."""
        self._columns = tuple(columns)
        self._generic = generic if self._columns else self._by_id
        by_id = self._by_id
        known = {id(column): span for span, column in by_id._spans} \
            if type(by_id) is HeldRows and by_id._order is ids else {}
        self._rows = () if ids is None or len(ids) != len(by_id) \
            else tuple(_spans(ids, self._columns, known))

    def open_columns(self) -> None:
        """Every entry generic again (a relayout may give a column's entry new storage): a
        :class:`HeldRows` makes every row's entry first (:meth:`HeldRows.open`)."""
        if type(self._by_id) is HeldRows:
            self._by_id.open()
        self._columns, self._generic, self._rows = (), self._by_id, ()

    def hold(self, ids: list[str], columns: Sequence[TableColumn],
             derived: Set[str] | None = None) -> HeldRows | None:
        """Hold the rows of ``columns`` whose rows are a :class:`ColumnRows` by column from
        now on (the compile, before it fills the table; ``ids``: every entry's id in the
        table's order): :attr:`by_id` becomes a :class:`HeldRows` of ``ids``, holding every
        other column's entries (and, put by the compile, every generic entry). A held column
        whose rows are not found in ``ids`` (:func:`span_of`) has its rows made (a list
        again). ``derived``: the ids of the graph's derived tensors, where ``ids`` are those
        (:class:`HeldRows`). Returns the new mapping, or None where no column holds its rows
        by column (nothing changed)."""
        found = [(span, column) for span, column in _spans(ids, columns)
                 if type(column.entries) is ColumnRows]
        taken = {id(column) for _, column in found}
        kept: dict[str, Entry] = {}
        for column in columns:
            if type(column.entries) is ColumnRows and id(column) not in taken:
                column.entries = list(column.entries)
            if type(column.entries) is not ColumnRows:
                kept.update(zip(column.ids, column.entries))
        if not found:
            return None
        rows = HeldRows(ids, kept, found, derived)
        if self._generic is self._by_id:
            self._generic = rows
        self._by_id = rows
        return rows

    # ---- answers by column -------------------------------------------------------------------
    @property
    def columns(self) -> tuple[TableColumn, ...]:
        """The stamped entry columns."""
        return self._columns

    @property
    def rows(self) -> tuple[tuple[slice, TableColumn], ...]:
        """Each column (of :attr:`columns`) with its rows' positions among the entries in the
        table's order (``list(by_id.values())[span]`` are its entries, in row order), where
        :meth:`set_columns` found them: the ids at ``span`` are the column's ids; a column
        not found there is left out."""
        return self._rows

    @property
    def generic(self) -> Mapping[str, Entry]:
        """The entries in no column, in the table's order."""
        return MappingProxyType(self._generic)

    def storages(self) -> Iterator[Any]:
        """Every entry's storage, the columns' first (lazy: nothing is read until iterated)."""
        return chain(chain.from_iterable(c.storages for c in self._columns),
                     map(_STORAGE, self._generic.values()))

    def spec_names(self) -> set[str]:
        """The names of the specs that declared the entries, read from the generic entries
        only: a column's rows are stamped from its template, which the stamper keys by its
        spec object (:meth:`~derivgraph.compiler.stamp.Stamper._kinds`), and the template is a
        generic entry (a stamped layer's row is never a template)."""
        return {e.node.bound.spec.name for e in self._generic.values()}

    def adopted(self) -> int:
        """How many entries hold a tensor the engine made (a column's rows never do)."""
        return sum(map(_ADOPTED, self._generic.values()))

    def scalars(self) -> list[str]:
        """The ids of the derived Python scalars, in order (a column holds none)."""
        entries = self._generic
        return list(compress(entries, map(operator.is_, map(_KIND, entries.values()),
                                          repeat(TensorKind.SCALAR))))



class ColumnRows(Sequence[Entry]):
    """The rows of a held column (:class:`~derivgraph.compiler.graph.HeldDerived`
    ``nodes``) as a column's entries, each made where first read and kept (the same object
    answers again): a :class:`RowEntry` in ``slot``, unadopted, its id and owner path the
    held column's, holding the row's storage, startup address and startup data. Those are
    the entry column's (:attr:`column`, once it takes the rows: its ``storages`` once
    allocated, ``ptrs`` and ``startup`` once recorded), else ``storages``' (what the rows
    were made holding: None where not given) and none. A made row is its own record from
    then on (a reader may write it): :meth:`read` answers it from its entry; the column's
    writers write the made rows again (:meth:`sync`)."""

    __slots__ = ("nodes", "slot", "storages", "column", "made")

    def __init__(self, nodes: HeldDerived, slot: Slot, storages: list[Any] | None = None):
        self.nodes, self.slot, self.storages = nodes, slot, storages
        self.column: Any = None  # the entry column that took these rows
        self.made: dict[int, Entry] = {}  # row -> its entry, made where read

    def __len__(self) -> int:
        return len(self.nodes.ids)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(map(self.__getitem__, range(len(self))[i]))
        row = range(len(self))[i]
        entry = self.made.get(row)
        if entry is None:
            nodes = self.nodes
            entry = RowEntry(nodes, row, nodes.ids[row], nodes.paths[row], None, self.slot,
                             False)
            self._fill(entry, row)
            self.made[row] = entry
        return entry

    def _fill(self, entry: Entry, row: int) -> None:
        entry.storage = self._storages()[row]
        entry.startup_ptr = self._ptrs()[row]
        entry.startup_data = self._startup()[row]

    def _storages(self) -> Sequence[Any]:
        column = self.column
        if column is not None and len(column.storages) == len(self):
            return column.storages
        return [None] * len(self) if self.storages is None else self.storages

    def _ptrs(self) -> Sequence[int]:
        ptrs = None if self.column is None else self.column.ptrs
        return [0] * len(self) if ptrs is None else ptrs

    def _startup(self) -> Sequence[Any]:
        data = None if self.column is None else self.column.startup
        return data if type(data) is list else [data] * len(self)

    def sync(self) -> None:
        """Every made row's storage, startup address and startup data the column's again
        (after the column wrote them)."""
        for row, entry in self.made.items():
            self._fill(entry, row)

    def read(self, name: str) -> list[Any]:
        """Each row's ``name`` (``storage``, ``startup_ptr`` or ``startup_data``) in row
        order: the column's list, a made row's read from its entry."""
        out = list({"storage": self._storages, "startup_ptr": self._ptrs,
                    "startup_data": self._startup}[name]())
        for row, entry in self.made.items():
            out[row] = getattr(entry, name)
        return out


def write_rows(entries: Sequence[Entry], name: str, values: Iterable[Any]) -> None:
    """Each of ``entries``' ``name`` the item of ``values`` (one sweep), the column having
    written them: :class:`ColumnRows` make their rows from the column, so only the rows made
    already are written (:meth:`ColumnRows.sync`)."""
    if type(entries) is ColumnRows:
        entries.sync()
    else:
        deque(map(setattr, entries, repeat(name), values), 0)


class HeldRows(Mapping[str, Entry]):
    """:attr:`EntryTable.by_id` where the table holds its held columns' rows by column
    (:meth:`EntryTable.hold`): the ids in the table's order (``order``), the entries kept as
    objects by id (``kept``: every entry in no such column) and those columns with their
    rows' positions in ``order``. A column's row is answered by its rows
    (:class:`ColumnRows`: its entry made where first read, and kept there), found by the
    ids' index (id -> position in ``order``, made on the first lookup of an id not kept or
    :meth:`keys`' ``isdisjoint``) and the columns' spans. The compile puts the
    generic entries (:meth:`put`); nothing else writes it but :meth:`open`.
    ``derived``: the ids of the graph's derived tensors, where ``order``'s ids (distinct) are
    derived tensors' (the compile's entries): where they are as many, they are the keys, and
    ``in``, ``keys().isdisjoint`` and the lookup of a key of none are answered by them (the
    graph's id sets), no index made for it."""

    __slots__ = ("_order", "_kept", "_columns", "_spans", "_index", "_derived")

    def __init__(self, order: list[str], kept: dict[str, Entry],
                 columns: Sequence[tuple[slice, TableColumn]],
                 derived: Set[str] | None = None):
        self._order, self._kept = order, kept
        self._derived = derived if derived is not None and len(derived) == len(order) \
            else None
        self._spans = tuple(columns)
        self._columns = tuple(column for _, column in columns)
        self._index: dict[str, int] | None = None  # id -> position in order

    def _positions(self) -> dict[str, int]:
        """The ids' index (id -> position in ``order``), made once."""
        index = self._index
        if index is None:
            index = self._index = dict(zip(self._order, count()))
        return index

    def _keys(self) -> Set[str] | None:
        """``derived`` where it is still as many ids as the table's (a graph that gained or
        lost a derived tensor since answers no more), else None."""
        derived = self._derived
        return derived if derived is not None and len(derived) == len(self._order) else None

    def _row(self, key: str) -> tuple[TableColumn, int] | None:
        derived = self._keys() if self._index is None else None
        if derived is not None and key not in derived:
            return None  # (a key of no derived tensor: no index made to say so)
        at = self._positions().get(key)
        if at is None:
            return None
        for span, column in self._spans:
            start, step = span.start, span.step
            if start <= at < span.stop and not (at - start) % step:
                return column, (at - start) // step
        return None

    def put(self, key: str, entry: Entry) -> None:
        """Keep ``entry`` (a generic entry the compile made, ``key`` of the order)."""
        self._kept[key] = entry

    # ---- the Mapping -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Entry:
        entry = self._kept.get(key)
        if entry is not None:
            return entry
        found = self._row(key)
        if found is None:
            raise KeyError(key)
        return found[0].entries[found[1]]

    def get(self, key: str, default: Any = None) -> Any:
        entry = self._kept.get(key)
        if entry is not None:
            return entry
        found = self._row(key)
        return default if found is None else found[0].entries[found[1]]

    def __contains__(self, key: object) -> bool:
        if key in self._kept:
            return True
        derived = self._keys()
        if derived is not None:
            return key in derived
        return type(key) is str and self._row(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def keys(self) -> KeysView[str]:
        return _HeldKeys(self)

    def __repr__(self) -> str:
        return f"HeldRows({len(self._order)} entries, {len(self._columns)} columns by row)"

    def storage(self, key: str) -> Any:
        """``self[key].storage``, a column's row's from its rows (no entry made)."""
        entry = self._kept.get(key)
        if entry is not None:
            return entry.storage
        found = self._row(key)
        if found is None:
            raise KeyError(key)
        column, row = found
        made = column.entries.made.get(row)
        return column.entries._storages()[row] if made is None else made.storage

    def read(self, name: str) -> list[Any]:
        """Every entry's ``name`` (``storage``, ``startup_ptr`` or ``startup_data``) in the
        table's order: a column's rows' by :meth:`ColumnRows.read`, every other entry read."""
        order = self._order
        out: list[Any] = [None] * len(order)
        taken = bytearray(len(order))
        for span, column in self._spans:
            if type(column.entries) is ColumnRows:
                out[span] = column.entries.read(name)
                taken[span] = b"\x01" * len(column.ids)
        rest = not_taken(taken)
        rest = range(len(order)) if rest is None else rest
        getter = operator.attrgetter(name)
        deque(map(operator.setitem, repeat(out), rest,
                  map(getter, map(self.__getitem__, map(order.__getitem__, rest)))), 0)
        return out

    def open(self) -> None:
        """Every row's entry made and kept (each column's entries a list again, of its rows'
        entries: no column answers a row any more)."""
        for column in self._columns:
            entries = column.entries = list(column.entries)
            self._kept.update(zip(column.ids, entries))
        self._columns, self._spans, self._index = (), (), None


class _HeldKeys(KeysView[str]):
    """:meth:`HeldRows.keys`: ``isdisjoint`` by the ids' index's view (one C-level sweep: the
    keys are the ids of ``order``), not a membership call per item."""

    _mapping: HeldRows

    def isdisjoint(self, other: Iterable[Any]) -> bool:
        rows = self._mapping
        if not rows._columns:  # (opened: every entry kept)
            return rows._kept.keys().isdisjoint(other)
        derived = rows._keys() if rows._index is None else None
        if derived is not None:
            return derived.isdisjoint(other)  # (the keys)
        return rows._positions().keys().isdisjoint(other)


class HeldEntries(Sequence[Entry]):
    """The entries of ``rows``' positions ``at`` (a range of its order), in order, made where
    read (:class:`HeldRows`)."""

    __slots__ = ("_rows", "_at")

    def __init__(self, rows: HeldRows, at: range):
        self._rows, self._at = rows, at

    def __len__(self) -> int:
        return len(self._at)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._rows[self._rows._order[j]] for j in self._at[i]]
        return self._rows[self._rows._order[self._at[i]]]

    def read(self, name: str) -> list[Any]:
        """Each entry's ``name`` in order (:meth:`HeldRows.read`: no row's entry made)."""
        every = self._rows.read(name)
        at = self._at
        return every if at == range(len(every)) else list(map(every.__getitem__, at))


def entry_list(entries: Mapping[str, Entry]) -> Sequence[Entry]:
    """Every entry of ``entries`` in order: a :class:`HeldRows`' as a :class:`HeldEntries` of every
    position (an entry made where read), else a list."""
    if type(entries) is HeldRows:
        return HeldEntries(entries, range(len(entries)))
    return list(entries.values())


def _spans(ids: list[str], columns: Sequence[TableColumn],
           known: Mapping[int, slice] | None = None) -> Iterator[tuple[slice, TableColumn]]:
    """Each of ``columns`` found in ``ids`` by :func:`span_of`, with its slice (``known``: the
    spans in ``ids`` found already, by column's ``id()``: taken, not found again)."""
    for column in columns:
        span = known[id(column)] if known and id(column) in known \
            else span_of(ids, column.ids)
        if span is not None:
            yield span, column


def span_of(ids: list[str], rows: list[str]) -> slice | None:
    """The slice of ``ids`` that is ``rows`` (equal, in order) at evenly spaced positions
    from the first position of ``rows[0]``, stepping to the next position of ``rows[1]``;
    None where there is none such."""
    if not rows:
        return None
    try:
        start = ids.index(rows[0])
        step = ids.index(rows[1], start + 1) - start if len(rows) > 1 else 1
    except ValueError:
        return None
    span = slice(start, start + step * (len(rows) - 1) + 1, step)
    return span if ids[span] == rows else None
