"""The sources' startup record (``Plan.source_ptrs``): path -> (object id, address), by column.

The compile records, for every source path and folded path, the id of the object it read there
and that object's address. :class:`SourcePtrs` is that record as a read-only
:class:`~collections.abc.Mapping` held as three parallel lists (paths, ids, addresses) in the
record's order: no per-path tuple is kept (an item's ``(id, address)`` is made where it is
read), and the path index is made on the first lookup by path. Iterating it, its
:meth:`~SourcePtrs.values` and :meth:`~SourcePtrs.items` read the lists in order (no index).
"""

from __future__ import annotations

import operator
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from itertools import count, repeat
from typing import Any

__all__ = ["SourcePtrs", "recorded_same"]

_MISSING: Any = object()


class SourcePtrs(Mapping[str, tuple[int, int]]):
    """Path -> ``(object id, address)`` of the objects a startup record read, as
    ``dict(zip(paths, zip(ids, ptrs)))`` answers it (the same keys in the same order, the
    same values), held as the lists ``paths`` (distinct), ``ids`` and ``ptrs`` (row ``i`` of
    each is path ``i``'s). Read-only: nothing writes the lists once made."""

    __slots__ = ("paths", "ids", "ptrs", "_rows")

    def __init__(self, paths: list[str], ids: list[int], ptrs: list[int]):
        if not len(paths) == len(ids) == len(ptrs):
            raise ValueError("a source record's paths, ids and addresses differ in length")
        self.paths, self.ids, self.ptrs = paths, ids, ptrs
        self._rows: dict[str, int] | None = None  # path -> row, made on first lookup

    @classmethod
    def record(cls, paths: list[str], objects: Sequence[Any], ptrs: list[int],
               tail: int = 0) -> SourcePtrs:
        """The record of ``objects`` read at ``paths`` at addresses ``ptrs`` (in order): their
        ids taken here (one sweep). ``paths`` before the last ``tail`` are distinct, and so are
        those ``tail``; where one of the tail repeats an earlier path, the record is the
        dict's (the key at its first place, the last value)."""
        ids = list(map(id, objects))
        if tail and not set(paths[len(paths) - tail:]).isdisjoint(paths[:len(paths) - tail]):
            merged = dict(zip(paths, zip(ids, ptrs)))
            return cls(list(merged), list(map(_first, merged.values())),
                       list(map(_second, merged.values())))
        return cls(paths, ids, ptrs)

    def _index(self) -> dict[str, int]:
        rows = self._rows
        if rows is None:
            rows = self._rows = dict(zip(self.paths, count()))
        return rows

    # ---- the Mapping -------------------------------------------------------------------------
    def __getitem__(self, path: str) -> tuple[int, int]:
        row = self._index()[path]
        return self.ids[row], self.ptrs[row]

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __contains__(self, path: object) -> bool:
        return path in self._index()

    def get(self, path: str, default: Any = None) -> Any:
        row = self._index().get(path, _MISSING)
        return default if row is _MISSING else (self.ids[row], self.ptrs[row])

    def values(self) -> ValuesView[tuple[int, int]]:
        return _Values(self)

    def items(self) -> ItemsView[str, tuple[int, int]]:
        return _Items(self)

    def __repr__(self) -> str:
        return f"SourcePtrs({len(self.paths)} paths)"


class _Values(ValuesView[tuple[int, int]]):
    """The record's values in order, read from its lists (no index)."""

    _mapping: SourcePtrs

    def __iter__(self) -> Iterator[tuple[int, int]]:
        record = self._mapping
        return zip(record.ids, record.ptrs)


class _Items(ItemsView[str, tuple[int, int]]):
    """The record's items in order, read from its lists (no index)."""

    _mapping: SourcePtrs

    def __iter__(self) -> Iterator[tuple[str, tuple[int, int]]]:
        record = self._mapping
        return zip(record.paths, zip(record.ids, record.ptrs))


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def recorded_same(recorded: Mapping[str, tuple[int, int]], paths: list[str],
                  objects: Sequence[Any], ptrs: Sequence[int]) -> list[bool]:
    """Per path of ``paths``, whether ``recorded`` (path -> (object id, address)) names it
    with ``objects``' object (its id) at ``ptrs``' address: ``recorded.get(path) ==
    (id(object), ptr)``. Where ``recorded`` is a :class:`SourcePtrs` whose paths start with
    ``paths`` (in their order), its lists' first rows are theirs: compared by sweeps (no
    tuple, no index); else path by path."""
    n = len(paths)
    if type(recorded) is SourcePtrs and recorded.paths[:n] == paths:
        return list(map(operator.and_, map(operator.eq, recorded.ids[:n], map(id, objects)),
                        map(operator.eq, recorded.ptrs[:n], ptrs)))
    return list(map(operator.eq, map(recorded.get, paths, repeat(None)),
                    zip(map(id, objects), ptrs)))
