"""Adopt or allocate: where each derived tensor's startup storage comes from.

For every derived tensor the compile driver asks one question: did the engine already make a
tensor equal to what the formula computes (then adopt it: its address is the one captured
graphs read), or must derivgraph allocate startup storage (then fill it from the formula)?
Aliases and views get their storage from another entry. Nothing here writes to the model.
"""

from __future__ import annotations

import operator
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from typing import Any

import torch
from torch import nn

from derivgraph.adoption_columns import Reading, alias_rows, allocated_rows
from derivgraph.compare import max_difference
from derivgraph.compiler.engine import adoption_problem
from derivgraph.compiler.graph import DerivedNode
from derivgraph.compiler.interpret import view_base
from derivgraph.compiler.owners import PathReader, child
from derivgraph.compiler.transaction import overlap_problem, source_storages
from derivgraph.errors import AdoptionError, Rule, SpecIssue
from derivgraph.paths import Slot, slot_of
from derivgraph.runtime.entry import ProvenColumn, span_of
from derivgraph.runtime.plan import Entry, Plan
from derivgraph.spec.kinds import TENSOR_KINDS, TensorKind, is_engine

__all__ = ["AliasOf", "Extra", "Planned", "PlannedById", "ViewOf", "adopt_or_allocate",
           "allocate_column", "allocate_like", "filled_column", "span_of"]

_is = operator.is_


def _same_values(a: torch.Tensor, b: torch.Tensor, tol: float) -> tuple[bool, float]:
    """Whether ``a`` and ``b`` agree within ``tol``; equal infinities and NaN pairs agree."""
    worst = max_difference(a, b)
    return worst <= tol, worst


def _slot_for(node: DerivedNode, owner: Any, target: Any) -> Slot:
    if node.kind in TENSOR_KINDS:
        return Slot(node.kind.value)
    if node.kind is TensorKind.SCALAR:
        return Slot.ATTRIBUTE
    current = slot_of(owner, node.decl.name)
    if current == Slot.PARAMETER and isinstance(target, nn.Parameter):
        return Slot.PARAMETER
    if current == Slot.BUFFER and isinstance(owner, nn.Module):
        return Slot.BUFFER
    return Slot.ATTRIBUTE


_KIND_SLOTS = {kind: Slot(kind.value) for kind in TensorKind if kind.value in set(Slot)}


def _slot(kind: TensorKind) -> Slot:
    """The slot of a tensor kind's name (``Slot(kind.value)``, looked up once)."""
    slot = _KIND_SLOTS.get(kind)
    return slot if slot is not None else Slot(kind.value)


@dataclass(frozen=True)
class AliasOf:
    """Materialize as the same object as derived tensor ``target`` (once it has storage)."""

    target: str


@dataclass(frozen=True)
class ViewOf:
    """Materialize as a view replayed over ``base``'s storage."""

    base: str


# how an entry gets its storage: adopted (None), allocated from a value, an alias or a view
Extra = AliasOf | ViewOf | torch.Tensor | None


def allocate_like(value: torch.Tensor, kind: TensorKind) -> torch.Tensor:
    """Fresh contiguous storage for a derived tensor of ``value``'s layout (a Parameter for
    kind parameter); not filled."""
    storage = torch.empty_like(value, memory_format=torch.contiguous_format)
    if kind is TensorKind.PARAMETER:
        storage = nn.Parameter(storage, requires_grad=False)
    return storage


def allocate_column(values: Sequence[torch.Tensor], kind: TensorKind,
                    row_major: bool = False) -> list[torch.Tensor]:
    """:func:`allocate_like` of every value of a column, in order. ``row_major``: the caller
    proved every value a plain ``torch.Tensor`` (strided) with the row-major strides of its
    shape (a layout record's ``contiguous is True``,
    :class:`~derivgraph.column_layout.ColumnLayout`); ``torch.empty_like``'s default format
    keeps the strides of such a tensor, which are the contiguous format's, so for a kind
    other than parameter the storages are made in one C-level sweep without the
    memory-format argument (the same fresh tensors)."""
    if _swept(kind, row_major):
        return list(map(torch.empty_like, values))
    return list(map(allocate_like, values, repeat(kind)))


def filled_column(values: Sequence[torch.Tensor], kind: TensorKind,
                  row_major: bool = False) -> list[torch.Tensor] | None:
    """:func:`allocate_column`'s storages each already holding its value, where it makes them
    in one sweep (``row_major``, as there: the values' one layout record, so one device) on
    the CPU: ``torch.clone`` of such a tensor is ``empty_strided`` of its sizes and strides
    (``empty_like``'s tensor) and then ``copy_`` of it, the fill the caller would do (on the
    CPU ``_foreach_copy_`` copies one pair at a time too; on a GPU it fuses the copies into
    few launches, which a clone per row would not). None elsewhere (the caller allocates and
    fills)."""
    if not (_swept(kind, row_major) and values and values[0].device.type == "cpu"):
        return None
    return list(map(torch.clone, values))


def _swept(kind: TensorKind, row_major: bool) -> bool:
    """Whether :func:`allocate_column` makes a column's storages in one C-level sweep."""
    return row_major and kind is not TensorKind.PARAMETER


def _placed(ids: list[str], taken: Sequence[ProvenColumn],
            ) -> tuple[list[Any], list[int], list[tuple[slice, ProvenColumn]]]:
    """Each of ``ids``' slot among the ``taken`` columns' rows (its entry and extra; None: in
    no column), the positions (ascending) of the Nones, and the columns found at evenly
    spaced positions; ``ids`` distinct (a topological order's). The rule: a dict of the
    columns' rows by id (a later column's row replacing an earlier one's), looked up at every
    id. Where each column's ids lie in ``ids`` at evenly spaced positions (:func:`span_of`:
    the slice equal to its ids), its rows are marked there (:data:`_IN_COLUMN`, read by
    :class:`Planned` from the column where asked for) by one slice assignment, the columns
    in order: an id of ``ids`` is at one position only, so each position gets the row of the
    last column holding its id, as by the dict."""
    slots: list[Any] = [None] * len(ids)
    found: list[tuple[slice, ProvenColumn]] = []
    for column in taken:
        rows = span_of(ids, column.ids)
        if rows is None:
            by_id: dict[str, tuple[Entry, Extra]] = {}
            for each in taken:
                by_id.update(zip(each.ids, zip(each.entries, each.extras)))
            slots, found = list(map(by_id.get, ids)), []
            break
        slots[rows] = [_IN_COLUMN] * len(column.ids)
        found.append((rows, column))
    return slots, list(compress(range(len(ids)), map(_is, slots, repeat(None)))), found


_IN_COLUMN = object()  # a slot of Planned that a column's row answers


class Planned(Sequence[tuple[Entry, Extra]]):
    """:func:`adopt_or_allocate`'s answer where columns were taken whole: each derived
    tensor's entry and extra in order, ``slots``' (a list), where a column's row is marked
    (:data:`_IN_COLUMN`) the row of its column (``columns``: each with its rows' positions)
    read where asked for: its entry (made then, :class:`~derivgraph.runtime.entry.ColumnRows`)
    and extra."""

    __slots__ = ("_slots", "_columns")

    def __init__(self, slots: list[Any], columns: list[tuple[slice, ProvenColumn]]):
        self._slots, self._columns = slots, columns

    def __len__(self) -> int:
        return len(self._slots)

    def __getitem__(self, i: Any) -> Any:
        every = range(len(self._slots))
        if isinstance(i, slice):
            return list(map(self.__getitem__, every[i]))
        slot = self._slots[i]
        if slot is not _IN_COLUMN:
            return slot
        at = every[i]
        for span, column in reversed(self._columns):  # the last column holding it: its row
            rows = every[span]
            if at in rows:
                row = rows.index(at)
                return column.entries[row], column.extras[row]
        raise IndexError(i)  # (a marked slot is a column's row)


_ABSENT = object()


class PlannedById(Mapping[str, tuple[Entry, Extra]]):
    """``dict(zip(ids, planned))``: :func:`adopt_or_allocate`'s answer ``planned`` by id
    (``ids``: its ids, distinct, each in ``derived``, the graph's derived tensors' ids),
    answered from ``planned`` at the id's position (the ids' index, id -> position, built
    when first needed: no row of ``planned`` read to build it).
    Until then a lookup of an id at one of the positions ``few`` is answered from a dict of
    those, and of a key of no derived tensor (so of no id) as a miss: the dict's answers.
    Only while ``derived`` holds the same keys."""

    __slots__ = ("_ids", "_planned", "_derived", "_few", "_all")

    def __init__(self, ids: list[str], planned: Sequence[tuple[Entry, Extra]], few: list[int],
                 derived: Container[str]):
        self._ids, self._planned, self._derived = ids, planned, derived
        self._few = dict(zip(map(ids.__getitem__, few), map(planned.__getitem__, few)))
        self._all: dict[str, int] | None = None

    def _dict(self) -> dict[str, int]:
        if self._all is None:
            self._all = dict(zip(self._ids, count()))
        return self._all

    def get(self, key: str, default: Any = None) -> Any:
        if self._all is None:
            found = self._few.get(key, _ABSENT)
            if found is not _ABSENT:
                return found
            if key not in self._derived:
                return default
        at = self._dict().get(key)
        return default if at is None else self._planned[at]

    def __getitem__(self, key: str) -> tuple[Entry, Extra]:
        found = self.get(key, _ABSENT)
        if found is _ABSENT:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())


_OVERLAP_FIX = ("declare it as kind 'view' (a view of the source, never written) or make the "
                "engine hold a tensor of its own")


def adopt_or_allocate(plan: Plan, values: dict[str, Any], owners: PathReader | None = None,
                      proven: list[ProvenColumn] | None = None,
                      order: list[list[Any]] | None = None) -> list[tuple[Entry, Extra]]:
    """Each derived tensor's entry and how it gets its storage (:data:`Extra`), in graph
    order; raises :class:`AdoptionError` with every issue. ``owners``: the reader of owner
    paths to use (it keeps every owner read); ``proven``: the stamped columns taken whole
    are appended (:class:`~derivgraph.runtime.entry.ProvenColumn`); ``order``: the
    entries' ids (in the answer's order) and the positions of those in no column of
    ``proven`` (ascending) are appended, in that order."""
    graph = plan.graph
    issues: list[SpecIssue] = []
    by_id: dict[str, Entry] = {}
    adopted_by: dict[int, str] = {}
    owners = PathReader(plan.model) if owners is None else owners  # each owner read once
    found: list[dict[str, torch.Tensor]] = []

    def sources() -> dict[str, torch.Tensor]:
        """What the pass must never write (read once, only when a tensor may be adopted)."""
        if not found:
            found.append(source_storages(plan.model, [*graph.sources(), *plan.folds.entries],
                                         graph.derived))
        return found[0]

    read = Reading()  # what the last column read, shared by the two (nothing written between)
    taken = allocated_rows(graph, values, owners, _slot, read)  # stamped rows: by column
    taken += alias_rows(graph, values, owners, AliasOf, read)
    if proven is not None:
        proven += taken
    ordered = graph.ordered()
    ids = list(compress(ordered, graph.derived_each(ordered)))  # the derived tensors, in order
    # the columns' rows are decided: each at its place, the rest decided in order and put at
    # theirs (a row with an issue stays None: the compile raises); an alias reads its
    # target's entry from by_id (the rows decided here; its target precedes it). A column
    # row's entry is never looked up: it is unadopted, its storage None (allocated later) or
    # its own value (an alias column's), so the alias's target is its value either way
    slots, rest, spans = _placed(ids, taken)
    if order is not None:
        order += ids, rest
    for at in rest:
        node_id = ids[at]
        node = graph.derived_node(node_id)
        owner = owners.owner(node.owner_path)
        value = values[node_id]
        name = node.decl.name
        current = child(owner, name)

        def issue(rule: str, msg: str, fix: str, node: DerivedNode = node) -> None:
            issues.append(SpecIssue(rule, msg, fix, node.decl.location, node.id))

        if node.kind is TensorKind.SCALAR:
            number = float(value.item()) if value.dtype.is_floating_point else value.item()
            held = isinstance(current, (int, float)) and not isinstance(current, bool)
            # an integer the engine holds is config: replaced only by the same number
            tolerance = 0.0 if isinstance(current, int) else node.decl.tolerance
            if held and abs(current - number) > tolerance and not (
                    current != current and number != number):
                issue(Rule.ADOPTION, f"the engine's {name} = {current!r} differs from the "
                      f"formula {node.decl.formula!r} = {number!r}",
                      "the spec or the engine is wrong: fix the formula to match the engine, "
                      "or set `tolerance` if the difference is rounding")
                continue
            slots[at] = (Entry(node, number, Slot.ATTRIBUTE, held), None)
            continue
        if node.kind is TensorKind.ALIAS:
            target_entry = by_id.get(node.input)
            target = target_entry.storage if target_entry else value
            if target_entry is not None and target_entry.storage is None:
                target = value  # allocated (or a view) later: the alias is bound then
            if isinstance(current, torch.Tensor) and current is not target:
                ok, worst = _same_values(target, current, node.decl.tolerance)
                if not ok:
                    issue(Rule.ADOPTION, f"the engine holds a different tensor at {node_id} than "
                          f"its alias target {node.input} (max |diff| {worst:g})",
                          "fix `of`, or the engine: an alias must be the same object")
            entry = Entry(node, target, _slot_for(node, owner, target), current is target)
            by_id[node_id] = entry
            slots[at] = (entry, AliasOf(node.input))
            continue
        if node.kind is TensorKind.VIEW:
            entry = Entry(node, None, _slot_for(node, owner, value), False)
            by_id[node_id] = entry
            slots[at] = (entry, ViewOf(view_base(graph, node.input)))
            continue
        if is_engine(node.decl):  # adopt what the engine made, never allocate
            slot = slot_of(owner, name)
            problem = adoption_problem(node, current, value)
            overlap = overlap_problem(current, node_id, sources()) \
                if isinstance(current, torch.Tensor) else None
            if problem is not None:
                issue(*problem)
            elif overlap is not None:
                issue(Rule.ADOPTION, f"cannot adopt the engine's {name}: {overlap}",
                      _OVERLAP_FIX)
            elif id(current) in adopted_by:
                issue(Rule.ALIAS, f"the engine holds {node_id} and {adopted_by[id(current)]} as "
                      "the same tensor object", f"declare {name} as kind 'alias' of the other")
            else:
                adopted_by[id(current)] = node_id
                slots[at] = (Entry(node, current, slot, True), None)
            continue
        if isinstance(current, torch.Tensor):
            slot = slot_of(owner, name)  # where the engine holds it (only read to adopt it)
            problems = []
            if current.shape != value.shape:
                problems.append(f"shape {list(current.shape)} vs formula {list(value.shape)}")
            if current.dtype != value.dtype:
                problems.append(f"dtype {current.dtype} vs formula {value.dtype}")
            if current.device != value.device:
                problems.append(f"device {current.device} vs formula {value.device}")
            item = slot == Slot.ELEMENT and node.kind is TensorKind.ATTRIBUTE  # a tuple's item
            if slot != node.kind and not item:
                problems.append(f"the engine holds it as a {slot}, the spec says {node.kind}")
            if problems:
                issue(Rule.ADOPTION, f"cannot adopt the engine's {name}: " + "; ".join(problems),
                      "make the spec match what the engine builds (kind, dtype, shape)")
                continue
            ok, worst = _same_values(current, value, node.decl.tolerance)
            if not ok:
                issue(Rule.ADOPTION, f"the engine's {name} differs from the formula "
                      f"{node.decl.formula!r} by up to {worst:g}",
                      "the spec or the engine is wrong: fix the formula to match the engine, "
                      "or set `tolerance` if the difference is rounding")
                continue
            overlap = overlap_problem(current, node_id, sources(), graph.source_deps()[node_id],
                                      exact=worst == 0.0 and node.decl.tolerance == 0.0,
                                      value=value)
            if overlap is not None:
                issue(Rule.ADOPTION, f"cannot adopt the engine's {name}: {overlap}", _OVERLAP_FIX)
                continue
            if id(current) in adopted_by:
                issue(Rule.ALIAS, f"the engine holds {node_id} and {adopted_by[id(current)]} as "
                      "the same tensor object", f"declare {name} as kind 'alias' of the other")
                continue
            adopted_by[id(current)] = node_id
            entry = Entry(node, current, Slot.ELEMENT if item else _slot(node.kind), True)
            by_id[node_id] = entry
            slots[at] = (entry, None)
        else:
            entry = Entry(node, None, _slot(node.kind), False)
            by_id[node_id] = entry
            slots[at] = (entry, value)
    if issues:
        raise AdoptionError(issues)
    return Planned(slots, spans) if spans else slots  # every slot filled where no issue


