"""Entry columns: a stamped template's derived tensor allocated and bound for every layer.

The compiler's instance tables (:class:`~derivgraph.compiler.instances.InstanceTable`, proven by
:func:`~derivgraph.compiler.layers.closed_layers`) say that a stamped layer is its template
renamed. A derived tensor of a template that the compile allocates as a plain attribute is then,
in every proven row, a fresh attribute of one name on a module: :class:`EntryColumn` records
that column once, its per-layer slots as lists in row order (ids, entries, owners, storages),
and the compile allocates, fills, binds and records the startup addresses of the whole column
in a few sweeps (:meth:`EntryColumn.allocate`, :meth:`EntryColumn.bind`,
:meth:`EntryColumn.record_startup`) instead of one generic per-entry step each. The
:class:`~derivgraph.runtime.entry.Entry` records stay the plan's per-tensor view
(``Plan.entries``, keyed by id), holding the column's storages; the plan keeps the columns in
its :class:`~derivgraph.runtime.entry.EntryTable`, whose readers take a column's answer
whole.

A stamped template's alias of a non-derived value (``of`` a source) that the compile binds as
a fresh attribute is an :class:`AliasColumn`: nothing allocated (every row's entry holds its
input's value already), bound and recorded the same way (no detached alias: not a held kind).

A column is proven, not trusted: :func:`entry_columns` keeps a column only where every row's
entry is allocated with the template's kind, slot and name on a plain module that holds the name
in no registry (what :func:`~derivgraph.paths.set_slot` would bind as one ``__dict__`` store),
and :meth:`EntryColumn.bind` refuses a column whose owners are not, row by row, the objects at
its own entries' owner paths (a column with mis-ordered slots), before anything is written.
An alias column is kept only where every row's entry is an unadopted alias in the attribute
slot of a value that is no planned entry (so nothing would change its
storage), held as a tensor on no meta device, on owners proven as above.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from itertools import compress, repeat
from typing import Any

import torch
from torch import nn

from derivgraph.adoption import AliasOf
from derivgraph.column_layout import (
    ColumnLayout,
    ColumnLayouts,
    column_layout,
    read_at_run,
    row_major,
    tensor_method,
)
from derivgraph.compiler.graph import HeldDerived
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.owners import PathReader
from derivgraph.errors import Rule, SpecIssue, SpecValidationError
from derivgraph.paths import Slot
from derivgraph.runtime.accessors import HeldColumn, ProvenOwners, same_owners
from derivgraph.runtime.entry import ColumnRows, Entry, ProvenColumn, StartupColumn, write_rows
from derivgraph.spec.kinds import TensorKind

__all__ = ["AliasColumn", "EntryColumn", "entry_columns", "held_columns"]

_is = operator.is_
_REGISTRIES = tuple(map(operator.itemgetter, ("_parameters", "_buffers", "_modules")))


class EntryColumn:
    """Template derived tensor ``template``'s counterpart in every proven row of its table:
    the rows' ids, entries, owners and (once allocated) storages, in row order; during the
    compile, ``values``: each row's planned value (adoption's extra, the row's eager value:
    what its fill copies and the bit check compares), else empty (the compile drops it);
    ``paths``: the rows' owner paths as adoption read them from the rows' nodes (each
    entry's node), else None (:meth:`owner_paths` reads them); ``nodes``: the held column
    whose rows the entries are (:class:`~derivgraph.runtime.entry.ProvenColumn`'s), else
    None (:meth:`inputs` reads each entry's node); ``ptrs``: the rows' startup addresses
    once :meth:`record_startup` wrote them to the entries (the same list), else None;
    ``kept``: what :meth:`record_startup` wrote to every row's startup data (True: set,
    False: none), else None (:func:`~derivgraph.runtime.entry.keeps_startup` reads it). Every
    row's tensor kind is :attr:`kind` (proven where the column is kept)."""

    __slots__ = ("template", "name", "ids", "entries", "owners", "storages", "values", "paths",
                 "nodes", "ptrs", "kept", "startup")

    #: every row's node's tensor kind
    kind = TensorKind.ATTRIBUTE

    def __init__(self, template: str, name: str, ids: list[str], entries: list[Entry],
                 owners: list[Any], values: list[Any] | None = None,
                 paths: list[str] | None = None, nodes: HeldDerived | None = None):
        self.template, self.name = template, name
        self.ids, self.entries, self.owners = ids, entries, owners
        self.storages: list[torch.Tensor] = []
        self.values: list[Any] = [] if values is None else values
        self.paths = paths
        self.nodes = nodes
        self.ptrs: list[int] | None = None
        self.kept: bool | None = None
        #: what :meth:`record_startup` wrote to the rows' startup data: the column's one
        #: record, a list (a row's each) or None (none)
        self.startup: Any = None
        if type(entries) is ColumnRows:  # its rows are made from this column
            entries.column = self

    def __len__(self) -> int:
        return len(self.ids)

    def allocate(self, values: list[torch.Tensor],
                 fills: list[tuple[torch.Tensor, torch.Tensor]],
                 allocate: Callable[[list[torch.Tensor], TensorKind, bool], list[torch.Tensor]],
                 book: ColumnLayouts | None = None,
                 filled: Callable[[list[torch.Tensor], TensorKind, bool],
                                  list[torch.Tensor] | None] | None = None) -> None:
        """Fresh storage for every row (``allocate(values, kind, row_major)``:
        :func:`~derivgraph.adoption.allocate_column`, each contiguous, of its value's dtype,
        shape and device), appended with its value to ``fills``; each row's entry holds its
        storage. ``book``: where the values have one layout (its record of them, else
        :func:`~derivgraph.column_layout.column_layout`), it records theirs and the
        storages' (the same, with row-major strides: by construction); a record that proves
        the values plain row-major tensors is handed to ``allocate`` (``row_major``).
        ``filled``: called first, the same way (:func:`~derivgraph.adoption.filled_column`);
        where it gives the storages already holding their values, they are taken and nothing
        is appended to ``fills``. Either makes new tensors: the book keeps them as a fresh
        column (:meth:`~derivgraph.column_layout.ColumnLayouts.add`)."""
        layout = None
        if book is not None:
            layout = book.common(values)  # the values of a column evaluated as one call
            if layout is None:
                layout = column_layout(values)
                if layout is not None:
                    book.add(values, layout)
        row_major = _row_major(values, layout)
        made = None if filled is None else filled(values, TensorKind.ATTRIBUTE, row_major)
        if made is not None:
            self.storages = made
        else:
            self.storages = allocate(values, TensorKind.ATTRIBUTE, row_major)
            fills += zip(self.storages, values)
        write_rows(self.entries, "storage", self.storages)
        if book is None:
            return
        types = set(map(type, self.storages))
        if layout is not None and len(types) == 1:
            book.add(self.storages, ColumnLayout(types.pop(), layout.dtype, layout.shape,
                                                 layout.device, True), fresh=True)

    def bind(self, owners: PathReader, last: ProvenOwners | None = None,
             paths: list[str] | None = None) -> ProvenOwners:
        """Store every row's storage in its owner's ``__dict__`` (one sweep), after proving
        that each row's owner is the object at its own entry's owner path (read by
        ``owners``). ``last``: what the previous column's bind returned (same ``owners``):
        where this column's owner paths and owners are its own row by row
        (:func:`~derivgraph.runtime.accessors.same_owners`: the columns of one table), its
        proof and ``__dict__`` s are taken. ``paths``: :meth:`owner_paths`, read already by
        the caller. Returns this column's."""
        paths = self.owner_paths() if paths is None else paths
        if last is not None and same_owners(paths, self.owners, last):
            dicts = last[2]
        else:
            if not all(map(_is, self.owners, owners.owners(paths))):
                wrong = next(i for i, (o, p) in enumerate(zip(self.owners, paths))
                             if o is not owners.owner(p))
                raise SpecValidationError([SpecIssue(
                    Rule.INFERENCE, f"the entry column of {self.template} holds another "
                    f"layer's owner at {self.ids[wrong]} (row {wrong}); nothing was bound",
                    "report this as a derivgraph bug", self.entries[wrong].node.decl.location,
                    self.ids[wrong])])
            dicts = [o.__dict__ for o in self.owners]
        deque(map(operator.setitem, dicts, repeat(self.name), self.storages), 0)
        return paths, self.owners, dicts

    def owner_paths(self) -> list[str]:
        """Each row's entry's owner path, in row order (one C-level sweep; a copy of
        :attr:`paths` where adoption read them)."""
        if self.paths is not None and len(self.paths) == len(self.entries):
            return list(self.paths)
        return list(map(_owner_path, self.entries))

    def inputs(self) -> list[str | None]:
        """Each row's node's ``input``, in row order: the held column's
        (:meth:`~derivgraph.compiler.graph.HeldDerived.input_values`, no node made), else
        read from each entry's node."""
        if self.nodes is not None:
            return self.nodes.input_values()
        return list(map(_input, self.entries))

    def record_startup(self, book: ColumnLayouts | None = None,
                       read: SourceAddresses | None = None) -> None:
        """Every row's startup address and a detached alias of its storage (one sweep each).
        ``read``: the sources' addresses as the caller read them (an alias column's; these
        rows are allocated, never a source).

        ``book``: the compile's layout book; where it records the column's storages (in
        their order) as plain row-major tensors off the meta device, each row keeps its
        storage (one ``untyped_storage()`` each) in the column's one record
        (:class:`~derivgraph.runtime.entry.StartupColumn`, every row's entry's
        ``startup_data``: no record per row) and the alias is made where it is first read
        (:meth:`~derivgraph.runtime.entry.Entry.startup_alias`). There, each row is at offset
        0 of its storage (what the alias is made at), so the addresses just read are its
        storage's: the book keeps them, and the storages, for the compile's readers of the
        column's storages (:meth:`~derivgraph.column_layout.ColumnLayouts.note_addresses`)."""
        entries, storages = self.entries, self.storages
        ptrs = self.ptrs = list(map(torch.Tensor.data_ptr, storages))
        write_rows(entries, "startup_ptr", ptrs)
        layout = None if book is None else book.common(storages)
        if layout is not None and layout.type is torch.Tensor and layout.contiguous is True \
                and not layout.is_meta:
            held = list(map(torch.Tensor.untyped_storage, storages))
            record = self.startup = StartupColumn(held, layout, self.ids)
            write_rows(entries, "startup_data", repeat(record))
            self.kept = True  # every row's startup data set, just now
            book.note_addresses(storages, ptrs, held)  # type: ignore[union-attr]
            return
        data = self.startup = list(map(torch.Tensor.detach, storages))
        write_rows(entries, "startup_data", data)
        self.kept = True  # every row's startup data set, just now


class AliasColumn(EntryColumn):
    """An :class:`EntryColumn` of aliases: each row's storage is the value its entry already
    holds (the alias target's object); bound like any column, recorded without a detached
    alias (an alias is not a held kind). ``storages``: the entries' storages in row order,
    where the caller read them (nothing written since), else read here."""

    __slots__ = ()

    kind = TensorKind.ALIAS

    def __init__(self, template: str, name: str, ids: list[str], entries: list[Entry],
                 owners: list[Any], values: list[Any] | None = None,
                 paths: list[str] | None = None, nodes: HeldDerived | None = None,
                 storages: list[Any] | None = None):
        super().__init__(template, name, ids, entries, owners, None, paths, nodes)  # no fill
        self.storages = list(map(_storage, entries)) if storages is None else storages

    def allocate(self, values: list[torch.Tensor],
                 fills: list[tuple[torch.Tensor, torch.Tensor]],
                 allocate: Callable[[list[torch.Tensor], TensorKind, bool], list[torch.Tensor]],
                 book: ColumnLayouts | None = None,
                 filled: Callable[[list[torch.Tensor], TensorKind, bool],
                                  list[torch.Tensor] | None] | None = None) -> None:
        """Nothing to allocate or fill: every row's entry holds its storage already."""

    def record_startup(self, book: ColumnLayouts | None = None,
                       read: SourceAddresses | None = None) -> None:
        """Every row's startup address (one sweep; proven tensors on no meta device), and no
        startup data (an alias keeps none: None on every row, ``kept`` False). ``read``: the
        sources (the objects at the source paths, read with nothing written since) and their
        ``data_ptr()`` s as the caller read them, in order; where the rows' storages (each its
        input's value) are a run of those very objects and of plain tensor classes (whose
        ``data_ptr()`` is ``torch.Tensor.data_ptr``, as read here), their addresses are taken
        from it."""
        storages = self.storages
        ptrs = None
        if read is not None and storages \
                and tensor_method(set(map(type, storages)), "data_ptr") is _DATA_PTR:
            ptrs = read_at_run(read[0], read[1], storages)
        self.ptrs = list(map(_DATA_PTR, storages)) if ptrs is None else ptrs
        self.startup = None
        write_rows(self.entries, "startup_ptr", self.ptrs)
        write_rows(self.entries, "startup_data", repeat(None))
        self.kept = False  # no row's startup data set (an alias keeps none), just now


#: the sources as a startup record read them and their ``data_ptr()`` s, in order
SourceAddresses = tuple[Sequence[Any], Sequence[int]]
_DATA_PTR = torch.Tensor.data_ptr


def _row_major(values: Sequence[Any], layout: ColumnLayout | None) -> bool:
    """Whether every one of ``values`` (of one ``layout``, its record or
    :func:`~derivgraph.column_layout.column_layout`'s answer) is a plain strided tensor with
    the row-major strides of its shape: the record proves it (``contiguous is True``), or
    they are one object (a shared constant) whose strides, read once, are those."""
    if layout is None or layout.type is not torch.Tensor:
        return False
    if layout.contiguous is True:
        return True
    first = values[0]
    return all(map(_is, values, repeat(first))) and first.layout is torch.strided \
        and first.stride() == row_major(layout.shape)


def held_columns(columns: Sequence[EntryColumn], others: Sequence[Entry],
                 owners: PathReader) -> list[HeldColumn]:
    """The bound ``columns`` still held each in its owner's ``__dict__`` only, once
    ``others`` (every other entry) are rebound, as
    :func:`~derivgraph.runtime.accessors.holders_of` takes them.

    A column is proved by :func:`entry_columns` (its name in no registry and no ``__dict__``
    of its module owners) and :meth:`EntryColumn.bind` (one ``__dict__`` store each). The
    rebind writes one :func:`~derivgraph.paths.set_slot` of an entry's name on its owner, so
    only the ``others`` of a column's name can reach its holders: it is kept where each of
    those has a module owner, as ``owners`` read it (the reader the binds used: nothing on
    the way was written), that is none of the column's owners. Each names its column
    (whose ids and storages the holder table takes for its rows')."""
    if not columns:
        return []
    names = {column.name for column in columns}
    same: dict[str, list[Any]] = {}
    for entry in compress(others, map(names.__contains__, map(_name, others))):
        same.setdefault(entry.node.decl.name, []).append(owners.owner(entry.node.owner_path))
    out: list[HeldColumn] = []
    for column in columns:
        found = same.get(column.name, [])
        if not all(isinstance(o, nn.Module) for o in found) \
                or any(any(map(_is, column.owners, repeat(o))) for o in found):
            continue
        out.append((column.name, column.entries, column.owners, column))
    return out


def entry_columns(tables: Sequence[InstanceTable], planned: Mapping[str, tuple[Entry, Any]],
                  owners: PathReader, proven: Sequence[ProvenColumn] = ()) -> list[EntryColumn]:
    """The entry columns of ``tables``' proven rows (``planned``: adoption's entry and extra
    by id; ``owners``: reads the objects at owner paths). A column is kept where the
    template's and every row's entry is allocated (its extra a tensor, not adopted) as an
    attribute in an attribute slot, of one name, on an :class:`nn.Module` that holds the name
    in no registry and no ``__dict__`` entry; anything else stays on the generic path. Each
    fact is one C-level sweep over the column. The alias columns (:class:`AliasColumn`,
    proven by :func:`_unplanned_aliases`) come after every allocated one.

    ``proven``: the columns adoption took whole (``planned``'s entries, read by ``owners``,
    nothing written since): a table's column among them takes the facts they prove
    (:func:`_from_adoption`); anything it does not prove is read as before."""
    out: list[EntryColumn] = []
    aliases: list[EntryColumn] = []
    taken = {(id(c.table), c.k): c for c in proven}
    swept: list[Any] = []  # owners the last taken column found holding no non-persistent name
    for table in tables:
        for k, template in enumerate(table.template):
            first = planned.get(template)
            if first is None:
                continue
            record = taken.get((id(table), k))
            if record is not None and record.table is table:
                found_column = _from_adoption(record, first, planned, swept)
                if found_column is not None:
                    (aliases if type(found_column) is AliasColumn else out).append(found_column)
                    continue
            ids = table.column(k)
            rows = [first, *map(planned.get, ids)]
            name = first[0].node.decl.name
            if None in rows:
                continue
            if _allocated_attributes(rows, name):
                kind, into = EntryColumn, out
            elif _unplanned_aliases(rows, name, planned):
                kind, into = AliasColumn, aliases
            else:
                continue
            entries = [e for e, _ in rows[1:]]
            found = owners.owners(list(map(_owner_path, entries)))
            if _fresh_on_modules(found, name):
                values = [x for _, x in rows[1:]] if kind is EntryColumn else None
                into.append(kind(template, name, ids, entries, found, values))
    return out + aliases


def _from_adoption(record: ProvenColumn, first: tuple[Entry, Any],
                   planned: Mapping[str, tuple[Entry, Any]],
                   swept: list[Any] | None = None) -> EntryColumn | None:
    """The column of ``record`` (its template's entry and extra ``first``), kept by the rules
    of :func:`entry_columns` where what adoption proved does not already say so: the
    template's row read as before; for the rows, the extras (tensors; for aliases
    :class:`AliasOf` of tensors on no meta device) and the owners' non-persistent buffer
    names. Adoption proved the rest: every row's declaration is the template's (its kind and
    name), its entry made unadopted in ``record.slot``, the name one hop and absent on every
    owner (so modules holding it nowhere), an alias's input no derived tensor (no planned
    entry). None where a fact fails (the caller reads the column as before). ``swept``: as
    :func:`_non_persistent`'s (the caller's, nothing written between its calls)."""
    entry = first[0]
    name = entry.node.decl.name
    if record.slot is not Slot.ATTRIBUTE or not record.entries \
            or record.decl is not entry.node.decl:
        return None
    kind = entry.node.kind
    storages: list[Any] | None = None  # an alias column's, read here
    if kind is TensorKind.ATTRIBUTE:
        if not (_allocated_attributes([first], name)
                and all(map(isinstance, record.extras, repeat(torch.Tensor)))):
            return None
    elif kind is TensorKind.ALIAS:
        # the storages its entries were made holding (nothing writes an entry of a proven
        # column before this), else each row's entry read. Their very list: the rows
        # (:class:`~derivgraph.runtime.entry.ColumnRows`) hold it too, and every holder only
        # reads it (a copy is one more young list of a reference per row for the collector)
        storages = record.storages if type(record.storages) is list \
            and len(record.storages) == len(record.entries) \
            else list(map(_storage, record.entries))
        if not (_unplanned_aliases([first], name, planned)
                and set(map(type, record.extras)) == {AliasOf}
                and all(map(isinstance, storages, repeat(torch.Tensor)))
                and not any(map(_is_meta, storages))):
            return None
    else:
        return None
    if _non_persistent(record.owners, name, swept):
        return None
    held = record.nodes if type(record.nodes) is HeldDerived else None
    if storages is not None:  # an alias column: its storages just read, nothing written since
        return AliasColumn(record.template, name, record.ids, record.entries, record.owners,
                           None, record.paths, held, storages)
    return EntryColumn(record.template, name, record.ids, record.entries, record.owners,
                       record.extras, record.paths, held)


_adopted, _slot = operator.attrgetter("adopted"), operator.attrgetter("slot")
_is_meta = operator.attrgetter("is_meta")
_kind, _name = operator.attrgetter("node.kind"), operator.attrgetter("node.decl.name")
_owner_path, _input = operator.attrgetter("owner_path"), operator.attrgetter("node.input")
_storage, _target = operator.attrgetter("storage"), operator.attrgetter("target")


def _allocated_attributes(rows: list[tuple[Entry, Any]], name: str) -> bool:
    """Every row's entry is allocated (its extra a tensor, not adopted) as an attribute named
    ``name`` in an attribute slot: each fact one C-level sweep."""
    entries = [e for e, _ in rows]
    return all(map(isinstance, [x for _, x in rows], repeat(torch.Tensor))) \
        and not any(map(_adopted, entries)) \
        and set(map(_kind, entries)) == {TensorKind.ATTRIBUTE} \
        and set(map(_slot, entries)) == {Slot.ATTRIBUTE} \
        and set(map(_name, entries)) == {name}


def _unplanned_aliases(rows: list[tuple[Entry, Any]], name: str,
                       planned: Mapping[str, tuple[Entry, Any]]) -> bool:
    """Every row's entry is an unadopted alias named ``name`` in the attribute slot whose
    target is no planned entry (so its storage stays the value it holds), that value a tensor
    on no meta device: each fact one C-level sweep."""
    entries, extras = [e for e, _ in rows], [x for _, x in rows]
    if set(map(type, extras)) != {AliasOf} or any(map(planned.__contains__,
                                                       map(_target, extras))):
        return False
    storages = list(map(_storage, entries))
    return not any(map(_adopted, entries)) \
        and set(map(_kind, entries)) == {TensorKind.ALIAS} \
        and set(map(_slot, entries)) == {Slot.ATTRIBUTE} \
        and set(map(_name, entries)) == {name} \
        and all(map(isinstance, storages, repeat(torch.Tensor))) \
        and not any(map(_is_meta, storages))


def _fresh_on_modules(owners: list[Any], name: str) -> bool:
    """Every owner is a module that holds ``name`` nowhere (so
    :func:`~derivgraph.paths.set_slot` binds it as one ``__dict__`` store)."""
    if name.startswith("__") and name.endswith("__"):
        return False
    if not all(issubclass(c, nn.Module) for c in set(map(type, owners))):
        return False
    dicts = [o.__dict__ for o in owners]
    if any(map(operator.contains, dicts, repeat(name))):
        return False
    for registry in _REGISTRIES:
        if any(map(operator.contains, map(registry, dicts), repeat(name))):
            return False
    return not _non_persistent(owners, name)


_NON_PERSISTENT = operator.attrgetter("_non_persistent_buffers_set")


def _non_persistent(owners: Sequence[Any], name: str, swept: list[Any] | None = None) -> bool:
    """Whether some module of ``owners`` holds ``name`` among its non-persistent buffer names
    (the per-owner rule); where none holds any such name (one C-level sweep of the sets'
    truth, the common case) it holds none named ``name`` either. ``swept``: the owners a
    call with nothing written since found holding no such name (kept here, replaced by
    ``owners`` where those hold none): where ``owners`` are those, one by one, none holds
    any either (one identity sweep)."""
    if swept and len(swept) == len(owners) and all(map(_is, owners, swept)):
        return False
    if not any(map(_NON_PERSISTENT, owners)):
        if swept is not None:
            swept[:] = owners
        return False
    return any(name in o._non_persistent_buffers_set for o in owners)
