"""Which items of a table of ``(dict, key)`` accessors may have changed, from the version tags
of the dicts that hold them (:mod:`derivgraph.dict_versions`, one gather for every dict).

An accessor table (owner hops, source holders, derived-tensor holders) checks each item by
identity: ``dicts[i].get(keys[i]) is expected[i]``. A dict whose tag did not move since the
last :meth:`ItemWatch.settle` holds the same values by identity, so only the items of the dicts
whose tag moved (and the items outside any dict) need that check. A watch is built right after
a check that proved every item (:func:`watch_items`), and settled only after a check (or the
plan's own stores) left every item proven again; anything else leaves the snapshot as it was,
so a change is reported until someone checks it.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress, count, islice, repeat
from typing import Any

import numpy as np

from derivgraph import dict_versions

__all__ = ["MIN_WATCHED", "ItemWatch", "group_by_dict", "watch_items"]

#: the fewest items a table needs for a watch: below it the table's direct identity sweep (the
#: reference check, one ``dict.get`` per item) costs less than the tag gather's cold NumPy path
#: right after a reload (the tiny vLLM Llama's tables of 7-10 items: ~20 us a reload in situ)
MIN_WATCHED = 64


class ItemWatch:
    """The items of an accessor table, grouped by the dict that holds them."""

    __slots__ = ("versions", "members", "always", "moved", "_apart")

    def __init__(self, versions: dict_versions.DictVersions, members: Sequence[Sequence[int]],
                 always: list[int]):
        self.versions = versions
        self.members = members  # per watched dict, the indices of the items it holds
        self.always = always  # items outside any watched dict: checked every time
        self.moved = False  # whether the last :meth:`suspects` found a dict mutated
        self._apart: tuple[ItemWatch, bool] | None = None  # see apart_from

    def suspects(self) -> list[int]:
        """Indices (ascending) of the items whose dict was mutated since the snapshot, and of
        the items outside any watched dict; empty when nothing can have changed."""
        moved = self.versions.changed()
        self.moved = bool(moved)
        if not moved:
            return self.always
        members = self.members
        return sorted([*self.always, *(i for p in moved for i in members[p])])

    def unchanged(self) -> bool:
        """No watched dict was mutated since the snapshot (items outside a dict excluded)."""
        return self.versions.unchanged()

    def settle(self) -> None:
        """Take the current tags as the snapshot: the caller just proved every item."""
        self.versions.rebase()

    def apart_from(self, other: ItemWatch) -> bool:
        """Whether no dict this watch reads is one ``other`` reads: a store into ``other``'s
        dicts moves none of this watch's tags. Both watch fixed dicts, so the answer is
        computed once per ``other`` (kept with it)."""
        known = self._apart
        if known is None or known[0] is not other:
            mine = set(map(id, self.versions.dicts))
            known = self._apart = (other, mine.isdisjoint(map(id, other.versions.dicts)))
        return known[1]


def watch_items(dicts: Sequence[dict[Any, Any]], outside: dict[Any, Any]) -> ItemWatch | None:
    """A watch over the items held in ``dicts`` (``outside``: the placeholder dict of items
    held in no dict, checked every time); None where the tags are not proven here, or for a
    table of fewer than :data:`MIN_WATCHED` items (swept directly)."""
    if not dict_versions.AVAILABLE or len(dicts) < MIN_WATCHED:
        return None
    unique, members, always = group_by_dict(dicts, outside)
    versions = dict_versions.watch_dicts(unique)
    return None if versions is None else ItemWatch(versions, members, always)


def group_by_dict(dicts: Sequence[dict[Any, Any]], outside: dict[Any, Any]) \
        -> tuple[list[dict[Any, Any]], Sequence[Sequence[int]], list[int]]:
    """The distinct dicts of ``dicts`` in first-seen order, each one's item indices
    (ascending), and the indices of the items held by ``outside`` (in no dict).

    A table whose every dict holds one run of adjacent items (a stamped table's holders: each
    owner's tensors in a row) is grouped by its runs (:func:`_by_runs`: C-level sweeps, each
    dict's indices a ``range``, made when read); any other is grouped item by item here (the
    rule)."""
    grouped = _by_runs(dicts, outside)
    if grouped is not None:
        return grouped
    positions: dict[int, int] = {}
    unique: list[dict[Any, Any]] = []
    members: list[list[int]] = []
    always: list[int] = []
    for i, d in enumerate(dicts):
        if d is outside:
            always.append(i)
            continue
        p = positions.get(id(d))
        if p is None:
            p = positions[id(d)] = len(unique)
            unique.append(d)
            members.append([])
        members[p].append(i)
    return unique, members, always


def _by_runs(dicts: Sequence[dict[Any, Any]], outside: dict[Any, Any]) \
        -> tuple[list[dict[Any, Any]], Sequence[Sequence[int]], list[int]] | None:
    """:func:`group_by_dict` where every dict of ``dicts`` (``outside`` included) holds one
    maximal run of adjacent items: the runs found by one identity sweep of each item against
    the one before, their first dicts distinct (one ``id`` set over the runs); None where a
    dict holds two runs (the caller groups item by item)."""
    items = list(dicts)
    if not items:
        return None
    # each item against the one before (no copies of the table: the map stops with islice)
    starts = [0, *compress(count(1), map(operator.is_not, islice(items, 1, None), items))]
    unique = list(map(items.__getitem__, starts))
    heads = np.fromiter(map(id, unique), dtype=np.uint64, count=len(unique))
    heads.sort()  # distinct heads: no two equal neighbours once sorted (no set of ids made)
    if len(heads) > 1 and bool((heads[1:] == heads[:-1]).any()):
        return None  # a dict seen again after another one
    ends = [*starts[1:], len(items)]
    always: list[int] = []
    for p in compress(count(), map(operator.is_, unique, repeat(outside))):
        always = list(range(starts.pop(p), ends.pop(p)))  # at most one run: distinct heads
        del unique[p]
        break
    return unique, _Runs(starts, ends), always


class _Runs(Sequence[range]):
    """Each run's item indices, ``range(starts[p], ends[p])``, made when asked (a watch reads
    only the runs of the dicts whose tag moved: no range made per run up front)."""

    __slots__ = ("starts", "ends")

    def __init__(self, starts: list[int], ends: list[int]):
        self.starts, self.ends = starts, ends

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, p: Any) -> Any:
        if isinstance(p, slice):
            return list(map(range, self.starts[p], self.ends[p]))
        return range(self.starts[p], self.ends[p])
