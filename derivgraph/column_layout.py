"""Layout facts proved once per entry column, read by the compile's per-tensor sweeps.

An :class:`~derivgraph.runtime.entry_columns.EntryColumn` allocates a stamped template's
derived tensor for every row with :func:`~derivgraph.adoption.allocate_like`: each storage has
its value's dtype, shape and device and is contiguous, by construction. Where one sweep over the
column's values proves that every value has one dtype, shape and device
(:func:`column_layout`), every storage and every value of the column has one
:class:`ColumnLayout`, and the compile's later readers of those facts (the lowering's layer
proof, the group keys, the bit check, the refill table) take it from :class:`ColumnLayouts`
instead of reading each of the column's tensors again (``.shape`` is the costly read). A
stamped run's source column is recorded the same way from the build's column proof of its
tensors (:func:`proven_layout`; ``planner._record_sources``): the build read them, and the
compile reads the very objects it found (its evaluation takes them) while nothing writes the
model; the startup record notes their storage addresses from the ``data_ptr()`` it reads of
every source (:meth:`ColumnLayouts.note_read_addresses`), for the layer proof.

A record is found by the tensor's identity and held with its tensors (so no id is reused
while the book lives); it is kept for one compile only (``planner._compile`` drops it), so a
tensor that was resized or replaced later is never answered from it. Any tensor the book does
not hold (an adopted one, a view, another compile's) is read as before.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress, count, islice, repeat
from operator import attrgetter, is_, is_not, methodcaller, mul, not_, sub
from typing import Any

import numpy
import torch

__all__ = ["ColumnFacts", "ColumnLayout", "ColumnLayouts", "book_of", "column_layout",
           "one_layout", "proven_layout", "read_at_run", "row_major", "tensor_method"]

_dtype, _shape, _device = attrgetter("dtype"), attrgetter("shape"), attrgetter("device")
_is_meta, _numel = attrgetter("is_meta"), torch.Tensor.numel
_storage_offset = torch.Tensor.storage_offset
#: :meth:`ColumnLayouts.of` looks up at most this many tensors no run answered one at a time
#: (each a byte search of the fresh columns' ids), more in the table of every entry (made once)
_FEW = 4
_WORD = array("Q").itemsize  # an id as a machine word (8 bytes)


@dataclass(frozen=True, eq=False)
class ColumnLayout:
    """What every tensor of one column has: its Python type, dtype, shape, device and
    contiguity (True: the row-major strides of its shape, so ``is_contiguous()``; None: not
    proved); ``numel`` and ``is_meta`` follow from them (compared by identity: one record per
    column)."""

    type: type
    dtype: torch.dtype
    shape: torch.Size
    device: torch.device
    contiguous: bool | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    @property
    def facts(self) -> tuple[Any, ...]:
        """Everything the record says, as one comparable tuple."""
        return self.type, self.dtype, self.shape, self.device, self.contiguous


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides of a contiguous tensor of ``shape`` as ``torch.empty`` makes it."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


#: the classes whose layout reads (``shape``, ``dtype``, ``device``, ``is_contiguous()``) are
#: the tensor's own (no ``__torch_function__`` of their own answers them)
_PLAIN = (torch.Tensor, torch.nn.Parameter)


def tensor_method(types: Iterable[type], name: str) -> Callable[[Any], Any]:
    """What calls ``t.<name>()`` on tensors whose classes are among ``types``: the unbound
    ``torch.Tensor`` method where each class is a plain tensor or parameter whose method is
    that one (one C call per tensor: no bound method made), else ``methodcaller(name)`` (a
    class's own method)."""
    method = getattr(torch.Tensor, name)
    if all(cls in _PLAIN and getattr(cls, name) is method for cls in set(types)):
        return method  # type: ignore[no-any-return]
    return methodcaller(name)


def proven_layout(layout: tuple[Any, ...]) -> ColumnLayout | None:
    """The record of tensors whose class, shape, stride, dtype and device were proved to be
    ``layout`` (:func:`~derivgraph.compiler.reads.layout`'s tuple, e.g. by the build's column
    proof of a source column): for a plain tensor or parameter with the row-major strides of
    its shape (so ``is_contiguous()``); None for any other (no contiguity proved)."""
    cls, shape, stride, dtype, device = layout
    if cls not in _PLAIN or tuple(stride) != row_major(shape):
        return None
    return ColumnLayout(cls, dtype, torch.Size(shape), device, True)


def column_layout(values: Sequence[Any]) -> ColumnLayout | None:
    """The one type, dtype, shape and device every tensor of ``values`` has (one C-level
    sweep per property; contiguity not read), None when they differ or one is not a
    tensor."""
    if not values:
        return None
    if all(map(is_, values, repeat(values[0]))):  # one object (a shared constant): read once
        values = values[:1]
    types = set(map(type, values))
    if len(types) != 1 or not issubclass(next(iter(types)), torch.Tensor):
        return None
    dtypes, devices = set(map(_dtype, values)), set(map(_device, values))
    if len(dtypes) != 1 or len(devices) != 1:
        return None
    shapes = set(map(_shape, values))
    if len(shapes) != 1:
        return None
    return ColumnLayout(types.pop(), dtypes.pop(), shapes.pop(), devices.pop())


class ColumnLayouts:
    """Tensor (by identity) -> the :class:`ColumnLayout` proved for its column, for the
    tensors :meth:`add` was given (it holds them: their ids stay theirs).

    A tensor's record is the one of the last :meth:`add` or :meth:`admit` given it. A
    *fresh* column (``add(..., fresh=True)``: tensors the caller just made, so in no column
    added before; the first column of an empty book is one too) is kept as a column only:
    its record is its tensors' unless a later add or admit gives one of them another, and
    those later ones (every add not fresh, every admit) are kept per tensor (``_loose``). A
    tensor in no loose entry is then in at most one fresh column, so :meth:`of` answers a
    fresh column's tensors where they lie in the query as a run at one step (one identity
    sweep) with its record, and the loose entries over them; any other tensor is looked up
    in the per-tensor table of every entry (made, in the entries' order, at its first need:
    the very dict the entries' updates would make); a few tensors (:meth:`common`'s first)
    by a byte search of the fresh columns' ids."""

    __slots__ = ("_all", "_loose", "_log", "_starts", "_words", "_columns", "_held",
                 "_addresses", "_sources", "_wholes")

    def __init__(self) -> None:
        # every entry in order: a column and its record, a fresh one marked (see the class)
        self._log: list[tuple[Sequence[Any], ColumnLayout, bool]] = []
        self._loose: dict[int, ColumnLayout] = {}  # the entries not fresh, per tensor
        self._starts: dict[int, int] = {}  # a fresh column's first tensor -> its log position
        self._all: dict[int, ColumnLayout] | None = None  # every entry per tensor (made lazily)
        # the fresh columns' id words and the log entries they were made from (_fresh_words)
        self._words: tuple[list[tuple[bytes, ColumnLayout]], int] = ([], 0)
        self._held: list[Any] = []  # the tensors admitted one by one
        # the id of a column's first tensor -> the column and its layout (the common case:
        # a reader asks about a whole column, in its order)
        self._columns: dict[int, tuple[Sequence[Any], ColumnLayout]] = {}
        # the id of a column's first tensor -> the column, its storages' data addresses, its
        # storages where read and whether those addresses are its tensors' ``data_ptr()``
        # (every tensor at offset 0: :meth:`note_addresses`, :meth:`data_addresses`)
        self._addresses: dict[int, tuple[Sequence[Any], list[int], list[Any] | None,
                                         bool]] = {}
        self._sources: list[int] = []  # the source columns' keys in ``_columns`` (see add)
        # the id of a column's first tensor -> the column and the one tensor it slices
        # (:meth:`note_whole`)
        self._wholes: dict[int, tuple[Sequence[Any], torch.Tensor]] = {}

    def __len__(self) -> int:
        return len(self._table())

    def __bool__(self) -> bool:
        """Whether the book holds a tensor (``len(self) > 0``, the table not made)."""
        return any(len(tensors) for tensors, _, _ in self._log)

    def add(self, tensors: Sequence[Any], layout: ColumnLayout, *,
            source: bool = False, fresh: bool = False) -> None:
        """Record that every tensor of ``tensors`` has ``layout`` (proved by the caller).
        ``source``: a source column (its addresses noted by :meth:`note_read_addresses`).
        ``fresh``: the caller made these tensors just now (none is in a column added before;
        see the class)."""
        fresh = fresh or not self._log
        if tensors:
            self._columns[id(tensors[0])] = (tensors, layout)
            if source:
                self._sources.append(id(tensors[0]))
            if fresh:
                self._starts[id(tensors[0])] = len(self._log)
        self._log.append((tensors, layout, fresh))
        if not fresh:
            self._loose.update(zip(map(id, tensors), repeat(layout)))
        if self._all is not None:
            self._all.update(zip(map(id, tensors), repeat(layout)))

    def _table(self) -> dict[int, ColumnLayout]:
        """Every entry's record per tensor, the last entry's where two give one tensor."""
        if self._all is None:
            table: dict[int, ColumnLayout] = {}
            for tensors, layout, _ in self._log:
                table.update(zip(map(id, tensors), repeat(layout)))
            self._all = table
        return self._all

    def _record(self, tensor: Any) -> ColumnLayout | None:
        """One tensor's record (None: not held): a loose entry's, else the fresh column's
        that holds it (a tensor in no loose entry is in at most one), found in the columns'
        id words (:meth:`_fresh_words`: one C-level byte search each)."""
        key = id(tensor)
        found = self._loose.get(key)
        if found is not None or self._all is not None:
            return found if found is not None else self._all.get(key)  # type: ignore[union-attr]
        needle = key.to_bytes(_WORD, sys.byteorder)
        for words, layout in self._fresh_words():
            at = words.find(needle)
            while at > 0 and at % _WORD:  # a match across two ids: look on
                at = words.find(needle, at + 1)
            if at >= 0:
                return layout
        return None

    def _fresh_words(self) -> list[tuple[bytes, ColumnLayout]]:
        """Each fresh column's tensors' ids as machine words (one C-level sweep per column,
        made at the first need, kept; a column added later is made when next asked)."""
        words, done = self._words
        for tensors, layout, fresh in islice(self._log, done, None):
            if fresh:  # (numpy's fromiter: the same machine words as ``array("Q")``'s, sooner)
                words.append((numpy.fromiter(map(id, tensors), numpy.uint64,
                                             len(tensors)).tobytes(), layout))
        self._words = (words, len(self._log))
        return words

    def admit(self, tensor: Any, layout: ColumnLayout) -> bool:
        """Record ``tensor`` under ``layout`` (a column's template, made apart from its rows)
        where its own facts, read now, are the record's; whether it was."""
        if type(tensor) is not layout.type or tensor.dtype != layout.dtype \
                or tensor.shape != layout.shape or tensor.device != layout.device:
            return False
        if layout.contiguous is False or layout.contiguous and (
                tensor.layout is not torch.strided or tensor.stride() != row_major(layout.shape)):
            return False  # a record says row-major strides or nothing
        self._held.append(tensor)
        self._log.append(((tensor,), layout, False))
        self._loose[id(tensor)] = layout
        if self._all is not None:
            self._all[id(tensor)] = layout
        return True

    def note_addresses(self, tensors: Sequence[Any], ptrs: list[int],
                       storages: list[Any] | None = None) -> None:
        """Record ``ptrs`` as the storage data address of each of ``tensors`` (in order), read
        by the caller: each tensor at offset 0 of its storage (its ``data_ptr()`` is its
        storage's), held by the book; ``storages``: their ``untyped_storage()``, where the
        caller read them (:meth:`storages`)."""
        if tensors and len(ptrs) == len(tensors) \
                and (storages is None or len(storages) == len(tensors)):
            self._addresses[id(tensors[0])] = (tensors, ptrs, storages, True)

    def source_runs(self, tensors: Sequence[Any]) -> list[tuple[int, slice]]:
        """Each source column (:meth:`add`) that is a run of ``tensors`` at one step (the very
        tensors, in order: one identity sweep): its key and that run, in the columns'
        order."""
        out = []
        for key in self._sources:
            run = _run_in(tensors, self._columns[key][0])
            if run is not None:
                out.append((key, run))
        return out

    def unproven_meta(self, count: int, runs: list[tuple[int, slice]]) -> bytearray:
        """One byte per tensor of the ``count`` ``runs`` were found in (:meth:`source_runs`):
        0 where a run holds it whose record proves a plain tensor or parameter off the meta
        device, 1 elsewhere."""
        marks = bytearray(b"\x01") * count
        for key, run in runs:
            layout = self._columns[key][1]
            if layout.type in _PLAIN and not layout.is_meta:
                marks[run] = bytes(len(range(*run.indices(count))))
        return marks

    def note_read_addresses(self, tensors: Sequence[Any], ptrs: Sequence[int],
                            runs: list[tuple[int, slice]] | None = None) -> None:
        """Note the storage data addresses of every source column (:meth:`add`) not noted
        yet that is a run of ``tensors`` at one step (the very tensors, in order: one identity
        sweep; ``runs``: :meth:`source_runs` of ``tensors``, where the caller found them),
        whose ``data_ptr()`` the caller read (``ptrs``, in ``tensors``' order, nothing
        re-pointed since; the startup record's sources), where its record proves what that
        address is: a plain tensor or parameter off the meta device, not empty (an empty
        tensor's ``data_ptr()`` is 0). Its storage's address is then ``data_ptr()`` less
        ``storage_offset()`` elements (one C-level sweep of the offsets); where every offset
        is 0 that is kept: the addresses are then the tensors' ``data_ptr()`` too
        (:meth:`data_addresses`)."""
        noted = self._addresses
        for key, run in self.source_runs(tensors) if runs is None else runs:
            column, layout = self._columns[key]
            if key in noted or layout.type not in _PLAIN or layout.is_meta \
                    or not layout.numel:
                continue
            found = list(ptrs[run])
            offsets = list(map(_storage_offset, column))
            at_data = not any(offsets)
            if not at_data:
                found = list(map(sub, found, map(mul, offsets, repeat(layout.dtype.itemsize))))
            noted[key] = (column, found, None, at_data)

    def note_whole(self, tensors: Sequence[Any], whole: torch.Tensor) -> bool:
        """Record that ``tensors`` are ``whole.unbind(0)``, in order (the caller made them so:
        a column evaluated as one call), where ``whole`` is a plain tensor, no view, with
        row-major strides, of ``len(tensors)`` slices that hold elements: each of ``tensors``
        then is contiguous and at the next address of ``whole``'s memory, so ``whole``
        flattened is their concatenation (:meth:`whole`). Whether it was recorded."""
        if not tensors or type(whole) is not torch.Tensor or whole._base is not None \
                or whole.dim() == 0 or whole.shape[0] != len(tensors) or not whole.numel() \
                or whole.layout is not torch.strided or whole.stride() != row_major(whole.shape):
            return False
        self._wholes[id(tensors[0])] = (tensors, whole)
        return True

    def whole(self, tensors: Sequence[Any]) -> torch.Tensor | None:
        """``torch.cat`` of ``tensors`` flattened, without a copy, where they are a column
        :meth:`note_whole` recorded (its very tensors in its order: one identity sweep): its
        one tensor flattened; else None."""
        noted = self._wholes.get(id(tensors[0])) if tensors else None
        if noted is None or len(noted[0]) != len(tensors) or not all(map(is_, tensors,
                                                                        noted[0])):
            return None
        return noted[1].reshape(-1)

    def addresses(self, tensors: Sequence[Any]) -> list[int] | None:
        """The storage data addresses :meth:`note_addresses` recorded for ``tensors``, where
        they are a noted column's very tensors in its order (one identity sweep); else None.
        The list is shared: read it, never change it."""
        noted = self._noted(tensors)
        return None if noted is None else noted[1]

    def data_addresses(self, tensors: Sequence[Any]) -> list[int] | None:
        """The ``data_ptr()`` of each of ``tensors``, as :meth:`addresses` finds them, where
        the book knows each at offset 0 of its storage (an entry column's storages:
        :meth:`note_addresses`; a source column whose every ``storage_offset()`` was 0 when
        :meth:`note_read_addresses` read them); else None. Shared: never change it."""
        noted = self._noted(tensors)
        return None if noted is None or not noted[3] else noted[1]

    def storages(self, tensors: Sequence[Any]) -> list[Any] | None:
        """The ``untyped_storage()`` of each of ``tensors`` :meth:`note_addresses` was given,
        as :meth:`addresses` finds them; None where it was given none. Shared: never change
        it."""
        noted = self._noted(tensors)
        return None if noted is None else noted[2]

    def _noted(self, tensors: Sequence[Any]) \
            -> tuple[Sequence[Any], list[int], list[Any] | None, bool] | None:
        noted = self._addresses.get(id(tensors[0])) if tensors else None
        if noted is None or noted[0] is not tensors and (
                len(noted[0]) != len(tensors) or not all(map(is_, tensors, noted[0]))):
            return None  # (the very sequence noted: the sweep would compare it with itself)
        return noted

    def of(self, tensors: Sequence[Any]) -> list[ColumnLayout | None]:
        """Each tensor's layout record, None for a tensor the book does not hold: a fresh
        column's (see the class) at its run in ``tensors``, a loose entry's over it; a tensor
        neither answers is looked up in the table of every entry."""
        if self._all is not None:
            return list(map(self._all.get, map(id, tensors)))
        n = len(tensors)
        ids = list(map(id, tensors))
        out: list[ColumnLayout | None] = [None] * n
        placed = bytearray(n)
        if self._starts:
            for at in compress(count(), map(self._starts.__contains__, ids)):
                column, layout, _ = self._log[self._starts[ids[at]]]
                run = _run_in(tensors, column, at)
                if run is not None and not any(placed[run]):
                    out[run] = [layout] * len(column)
                    placed[run] = b"\x01" * len(column)
        if self._loose and not self._loose.keys().isdisjoint(ids):
            found = list(map(self._loose.get, ids))
            for i in compress(count(), map(is_not, found, repeat(None))):
                out[i], placed[i] = found[i], 1
        if 0 in placed:  # a tensor no run and no loose entry answered: the table's (a few
            # tensors: a scan of the fresh columns each, :meth:`_record`)
            rest = list(compress(count(), map(not_, placed)))
            if len(rest) <= _FEW:
                for i in rest:
                    out[i] = self._record(tensors[i])
            else:
                table = self._table()
                for i in rest:
                    out[i] = table.get(ids[i])
        return out

    def held(self, tensors: Sequence[Any]) -> tuple[Sequence[Any], ColumnLayout] | None:
        """The recorded column (:meth:`add`) that is ``tensors``' very tensors in its order,
        and its record: one identity sweep, none for the very sequence it was recorded with
        (the sweep would compare it with itself); None where there is none. A caller that
        reads the column in place of ``tensors`` hands its later readers that very sequence
        (their sweeps then go): it is shared, read it, never change it."""
        column = self._columns.get(id(tensors[0])) if tensors else None
        if column is not None and (column[0] is tensors or len(column[0]) == len(tensors)
                                   and all(map(is_, tensors, column[0]))):
            return column
        return None

    def common(self, tensors: Sequence[Any]) -> ColumnLayout | None:
        """The one record every tensor of ``tensors`` is held under; None when one is not
        held or two records differ."""
        if not tensors:
            return None
        column = self.held(tensors)
        if column is not None:  # one recorded column, in its order
            return column[1]
        first = self._record(tensors[0])
        if first is None:
            return None
        rest = self._columns.get(id(tensors[1])) if len(tensors) > 1 else None
        if rest is not None and len(rest[0]) == len(tensors) - 1 \
                and all(map(is_, islice(tensors, 1, None), rest[0])):
            # a first tensor (a column's template) before a recorded column in its order: the
            # records are the first's and the column's, repeated (one_layout reads the set)
            return one_layout([first, rest[1]])
        return one_layout(self.of(tensors))


def read_at_run(items: Sequence[Any], found: Sequence[Any],
                column: Sequence[Any]) -> list[Any] | None:
    """What ``found`` (one answer per item of ``items``, in order) holds for ``column``'s
    very objects, where they are a run of ``items`` at one step (:func:`_run_in`); None where
    they are not."""
    run = _run_in(items, column) if len(found) == len(items) else None
    return None if run is None else list(found[run])


def _run_in(items: Sequence[Any], column: Sequence[Any], start: int | None = None) \
        -> slice | None:
    """The slice of ``items`` that is ``column``'s very objects in its order, at one step
    (found by its first two objects, each by a lazy C-level identity scan that stops there;
    ``start``: the first one's position, where the caller found it; proved by one identity
    sweep); None where there is none."""
    n = len(column)
    if start is None:
        start = _position(items, column[0], 0) if n else None
    if start is None:
        return None
    after = _position(items, column[1], start + 1) if n > 1 else start + 1
    if after is None:
        return None
    run = slice(start, start + (after - start) * (n - 1) + 1, after - start)
    picked = items[run]
    return run if len(picked) == n and all(map(is_, picked, column)) else None


def _position(items: Sequence[Any], obj: Any, start: int) -> int | None:
    """The first position from ``start`` of ``items`` that holds ``obj`` itself (None: none)."""
    return next(compress(count(start), map(is_, islice(items, start, None), repeat(obj))), None)


def one_layout(records: Sequence[ColumnLayout | None]) -> ColumnLayout | None:
    """The layout every one of ``records`` gives (the first record: all say the same facts);
    None when there are none, one is None, or two differ."""
    if not records or records[0] is None:
        return None
    first = records[0]
    if all(map(is_, records, repeat(first))):
        return first
    if None in records:
        return None
    facts = first.facts
    return first if all(r.facts == facts for r in set(records)) else None  # type: ignore[union-attr]


def _one(values: Sequence[Any], read: Any) -> Any:
    found = set(map(read, values))
    return found.pop() if len(found) == 1 else None


class ColumnFacts:
    """What every value of a column has in common, each fact read once, when first asked:
    from the column's layout record where a book holds it under one record that proves its
    contiguity (see :meth:`ColumnLayouts.common`), else in one C-level sweep over the values.
    A fact the values do not share is None. The tensor facts (``dtype`` to ``numel``) are read
    only where every value is a tensor (:attr:`tensors`)."""

    def __init__(self, values: Sequence[Any], book: ColumnLayouts | None = None):
        self.values = values
        record = None if book is None else book.common(values)
        #: the record the facts come from; None: read from the values
        self.record = record if record is not None and record.contiguous is not None else None

    @cached_property
    def type(self) -> type | None:
        return self.record.type if self.record is not None else _one(self.values, type)

    @cached_property
    def tensors(self) -> bool:
        """Every value is a tensor (of any tensor type)."""
        return self.record is not None or all(map(isinstance, self.values,
                                                  repeat(torch.Tensor)))

    @cached_property
    def dtype(self) -> torch.dtype | None:
        return self.record.dtype if self.record is not None else _one(self.values, _dtype)

    @cached_property
    def shape(self) -> torch.Size | None:
        return self.record.shape if self.record is not None else _one(self.values, _shape)

    @cached_property
    def device(self) -> torch.device | None:
        return self.record.device if self.record is not None else _one(self.values, _device)

    @cached_property
    def contiguous(self) -> bool | None:
        """``is_contiguous()`` of every value (a record: its row-major strides say True)."""
        return self.record.contiguous if self.record is not None \
            else _one(self.values, torch.Tensor.is_contiguous)

    @cached_property
    def is_meta(self) -> bool | None:
        return self.record.is_meta if self.record is not None else _one(self.values, _is_meta)

    @cached_property
    def numel(self) -> int:
        """The elements of all the values together."""
        if self.record is not None:
            return self.record.numel * len(self.values)
        return sum(map(_numel, self.values))


def book_of(ctx: Any) -> ColumnLayouts | None:
    """The layout book of a lowering context (a plan's bound tensors) during its compile;
    None for a context that has none."""
    return getattr(ctx, "layouts", None)
