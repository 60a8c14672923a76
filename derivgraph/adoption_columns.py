"""Adoption of stamped rows a column at a time: rows whose derived tensor is simply allocated.

:func:`~derivgraph.adoption.adopt_or_allocate` decides per derived tensor whether it adopts
what the engine holds or allocates fresh storage. For a derived tensor of kind parameter,
buffer or attribute that is not engine-computed, the decision reads one fact of the model:
whether its owner already holds a tensor at its name (adopt and compare) or not (allocate;
nothing to check, no issue possible). :func:`allocated_rows` takes that branch for the rows of
a stamped table (:func:`~derivgraph.compiler.layers.closed_layers`) a column at a time: every
row's node has the template node's declaration (the same object: the same kind and name), and
what :func:`~derivgraph.compiler.owners.child` would read at that name on every row's owner is
proven absent a class at a time (:func:`~derivgraph.paths.absent_on_modules`: modules holding
the name nowhere). A column where that is not proven (a row holding a tensor there, an owner
of another kind) or a row has another declaration is left to the per-tensor path.

:func:`alias_rows` does the same for a column of aliases whose input is no derived tensor
(``of`` a source, say): where the name is proven absent on every row's owner, the per-tensor
path reads nothing else (no tensor to compare, no registry: the slot is ``attribute``, the
storage is the input's value), so the whole column's entries are made in a few sweeps.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

from derivgraph.compiler.columns import row_values
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, HeldDerived
from derivgraph.compiler.layers import closed_layers
from derivgraph.compiler.owners import PathReader, one_hop
from derivgraph.paths import MISSING, ModuleOwners, Slot
from derivgraph.runtime.entry import ColumnRows, Entry, ProvenColumn
from derivgraph.spec.kinds import TENSOR_KINDS, TensorKind, is_engine
from derivgraph.spec.model import DerivedTensor

__all__ = ["Reading", "alias_rows", "allocated_rows", "column_rows"]

_is = operator.is_
_decl, _owner_path = operator.attrgetter("decl"), operator.attrgetter("owner_path")
_input = operator.attrgetter("input")


def _holds_none(nodes: list[Any]) -> bool:
    """``None in nodes`` by identity (one C-level sweep: ``in`` calls a node's dataclass
    ``__eq__`` for every node)."""
    return any(map(_is, nodes, repeat(None)))


def column_rows(graph: DerivedGraph, ids: list[str], decl: DerivedTensor,
                ) -> tuple[HeldDerived | list[DerivedNode], list[str], list[str | None]] | None:
    """The nodes, owner paths and inputs of the derived tensors ``ids`` (a table column), in
    row order, where every id is a derived tensor's whose node has the declaration ``decl``
    (the same object); None where one is not. A column the graph holds
    (:meth:`~derivgraph.compiler.graph.DerivedGraph.held_column`) is read as a column: one
    declaration for its rows (checked once), its paths and inputs its lists, and it stands
    for its nodes (none made here); else every row's node is read from
    :attr:`~derivgraph.compiler.graph.DerivedGraph.derived`. A held column's paths are its
    very list (shared, read only: a copy would be one more young list of a reference per
    row for the collector to walk, kept by the entry column)."""
    held = graph.held_column(ids)
    if held is not None:
        if held.decl is not decl:
            return None
        return held, held.paths, held.input_values()
    derived = graph.derived
    nodes = list(map(derived.get, ids))
    if _holds_none(nodes) or not all(map(_is, map(_decl, nodes), repeat(decl))):
        return None
    return nodes, list(map(_owner_path, nodes)), list(map(_input, nodes))


def allocated_rows(graph: DerivedGraph, values: dict[str, Any], owners: PathReader,
                   slot: Callable[[TensorKind], Slot],
                   read: Reading | None = None) -> list[ProvenColumn]:
    """The columns of stamped rows' derived tensors that the per-tensor path would allocate
    (see the module docstring), each taken whole
    (:class:`~derivgraph.runtime.entry.ProvenColumn`: every row's entry and its value as
    its extra); ``slot(kind)``: the slot of a tensor kind; ``read``: what the last column read
    (:class:`Reading`), shared with the caller's next reader of the same model (nothing
    written in between)."""
    out: list[ProvenColumn] = []
    read = Reading() if read is None else read  # the last column's owners: once a table
    for table in closed_layers(graph):
        for k, template in enumerate(table.template):
            first = graph.derived_node(template)
            if first is None or first.kind not in TENSOR_KINDS or is_engine(first.decl):
                continue
            ids = table.column(k)
            rows = column_rows(graph, ids, first.decl)
            if rows is None:
                continue
            nodes, paths, _ = rows
            ids = _ids(nodes, ids)
            name = first.decl.name
            found = read.owners(owners, paths)
            if not (one_hop(name) and read.module_owners(found).absent(name)):
                continue  # a row whose owner may hold a tensor: adopted (or refused) on its own
            into = slot(first.kind)
            entries = _entries(nodes, None, into)
            extras = row_values(values, ids)
            out.append(ProvenColumn(table, k, template, ids, entries, extras, found, into, paths,
                                    first.decl, nodes))
    return out


def _ids(nodes: HeldDerived | list[DerivedNode], ids: list[str]) -> list[str]:
    """A column's ids as the entry column keeps them: a held column's very list (shared, read
    only; :func:`column_rows` found it by ``ids``, equal row by row:
    :meth:`~derivgraph.compiler.graph.DerivedGraph.held_column`), else ``ids``. The table's
    ``column(k)`` is a new list each time: kept, it is one more young list of a reference per
    row for the collector to walk."""
    return nodes.ids if type(nodes) is HeldDerived else ids


def _entries(nodes: HeldDerived | list[DerivedNode], storages: list[Any] | None,
             slot: Slot) -> Sequence[Entry]:
    """An unadopted entry in ``slot`` per row (:func:`column_rows`' ``nodes``), holding
    ``storages``' item (None: none): a held column's rows
    (:class:`~derivgraph.runtime.entry.ColumnRows`: each row's entry, and its node, made
    where first read), else one :class:`Entry` per node."""
    if type(nodes) is HeldDerived:
        return ColumnRows(nodes, slot, storages)
    return list(map(Entry, nodes, repeat(None) if storages is None else storages,
                    repeat(slot), repeat(False)))


class Reading:
    """What the last column of :func:`allocated_rows` / :func:`alias_rows` read of the
    model, for the next column's (a table's columns share their rows' owner paths and
    owners): its owner paths, the objects at them and their
    :class:`~derivgraph.paths.ModuleOwners`. Only while nothing writes to the model (adoption
    writes nothing while it reads)."""

    __slots__ = ("paths", "found", "modules")

    def __init__(self) -> None:
        self.paths: list[str] | None = None
        self.found: list[Any] = []
        self.modules: ModuleOwners | None = None

    def owners(self, reader: PathReader, paths: list[str]) -> list[Any]:
        """``reader.owners(paths)``. Where ``paths`` are the last ones read (equal, row by
        row), the very list of the objects read then (shared, read only: the reader keeps the
        object it walked at each path and answers it at that path again, the same key: the
        same object; a copy would be one more young list per column for the collector)."""
        if self.paths is not None and self.paths == paths:
            return self.found
        found = reader.owners(paths)
        self.paths, self.found = paths, found
        return found

    def module_owners(self, found: list[Any]) -> ModuleOwners:
        """``found``'s :class:`~derivgraph.paths.ModuleOwners`: the last one's where it was
        made of the same objects, one by one, else a new one (kept)."""
        last = self.modules
        if last is not None and len(last.objs) == len(found) and all(map(_is, found, last.objs)):
            return last
        self.modules = ModuleOwners(found)
        return self.modules


def alias_rows(graph: DerivedGraph, values: dict[str, Any], owners: PathReader,
               alias_of: Callable[[str], Any],
               read: Reading | None = None) -> list[ProvenColumn]:
    """The columns of stamped rows' aliases whose input is no derived tensor (each row's
    entry, ``alias_of(input)`` its extra), taken whole where the per-tensor path would read
    nothing else: every row's node has the template node's declaration (the same object),
    the name is proven absent on every row's owner
    (:func:`~derivgraph.paths.absent_on_modules`: then
    :func:`~derivgraph.compiler.owners.child` reads :data:`~derivgraph.paths.MISSING` there,
    so there is nothing to compare, and :func:`~derivgraph.paths.slot_of` says
    ``Slot.MISSING``: the alias's slot is ``Slot.ATTRIBUTE``); the entry holds the row's
    value (its input's), not adopted. ``read``: as :func:`allocated_rows`'."""
    out: list[ProvenColumn] = []
    read = Reading() if read is None else read  # as allocated_rows'
    for table in closed_layers(graph):
        for k, template in enumerate(table.template):
            first = graph.derived_node(template)
            if first is None or first.kind is not TensorKind.ALIAS:
                continue
            ids = table.column(k)
            rows = column_rows(graph, ids, first.decl)
            if rows is None:
                continue
            nodes, paths, inputs = rows
            ids = _ids(nodes, ids)
            if None in inputs or any(graph.derived_each(inputs)):
                continue  # an alias of a derived tensor: bound once that one has storage
            name = first.decl.name
            found = read.owners(owners, paths)
            if not (one_hop(name) and read.module_owners(found).absent(name)):
                continue
            targets = row_values(values, ids)
            if any(map(_is, targets, repeat(MISSING))):
                continue  # adopted would read `current is target`: one by one
            entries = _entries(nodes, targets, Slot.ATTRIBUTE)
            extras = list(map(alias_of, inputs))
            out.append(ProvenColumn(table, k, template, ids, entries, extras, found,
                                    Slot.ATTRIBUTE, paths, first.decl, nodes, targets))
    return out
