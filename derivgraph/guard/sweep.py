"""The watch's C-level sweeps: every watched container's length and items as flat arrays.

A :class:`Sweep` keeps every container the watch looks at (a dict or a list), in address order
(neighbours share cache lines and pages), with its length, and one accessor per watched dict
item: ``dict.get(dicts[i], keys[i])`` is the snapshot value ``values[i]``. :meth:`Sweep.dirty`
answers which containers changed in one sweep of lengths, one of dict items and one of list
items. A dict item whose snapshot value held no tensor has a value template
(:func:`~derivgraph.guard.template.value_template`): a new value there that provably holds no
tensor either (an atom; a rebuilt closure of the same shape) does not make its container dirty.
A dict that only grew by such values can be re-based (:meth:`Sweep.grow`) so that later sweeps
see it unchanged.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from itertools import chain, compress, repeat
from typing import Any

from derivgraph.guard.holders import MISSING
from derivgraph.guard.template import harmless

__all__ = ["Sweep"]

_is, _not = operator.is_, operator.not_

#: how many times one container may be re-based (an engine adding keys on every reload would
#: otherwise grow the accessors without bound; past this its container is diffed every time)
MAX_GROWS = 4


def _mismatches(flags: list[bool]) -> list[int]:
    """The indices of the False flags (one C-level scan per hit)."""
    out: list[int] = []
    i = -1
    for _ in range(flags.count(False)):
        i = flags.index(False, i + 1)
        out.append(i)
    return out


class Sweep:
    """Flat arrays over the watched containers (see the module docstring)."""

    def __init__(self) -> None:
        self.live: list[Any] = []    # every container
        self.keys: list[tuple[Any, ...] | None] = []  # its keys (None: a list)
        self.values: list[tuple[Any, ...]] = []
        self.lists: list[int] = []   # the containers that are lists
        self.acc_dicts: list[dict[Any, Any]] = []
        self.acc_keys: list[Any] = []
        self.acc_values: list[Any] = []
        self.acc_container: list[int] = []
        self.acc_templates: list[Any] = []  # a value template, or None
        self.grows: dict[int, int] = {}

    def add(self, container: Any, items: list[tuple[Any, Any, Any]] | None) -> int:
        """Watch ``container``; ``items``: the dict items to sweep as (key, value, template)
        (None for a list). Returns its index."""
        index = len(self.live)
        self.live.append(container)
        if items is None:
            self.lists.append(index)
            self.keys.append(None)
            self.values.append(tuple(container))
            return index
        self.keys.append(tuple(container))
        self.values.append(tuple(container.values()))
        self._accessors(container, index, items)
        return index

    def _accessors(self, container: Any, index: int, items: list[tuple[Any, Any, Any]]) -> None:
        for k, v, template in items:
            self.acc_dicts.append(container)
            self.acc_keys.append(k)
            self.acc_values.append(v)
            self.acc_container.append(index)
            self.acc_templates.append(template)

    def seal(self) -> None:
        """Order the sweeps by address (after the last :meth:`add`)."""
        self.by_address = sorted(range(len(self.live)), key=lambda i: id(self.live[i]))
        self.position = {i: p for p, i in enumerate(self.by_address)}
        self.live_by_address = [self.live[i] for i in self.by_address]
        self.lens = list(map(len, self.live_by_address))
        acc = sorted(zip(self.acc_dicts, self.acc_keys, self.acc_values, self.acc_container,
                         self.acc_templates), key=lambda a: id(a[0]))
        columns = [list(column) for column in zip(*acc)] if acc else [[], [], [], [], []]
        (self.acc_dicts, self.acc_keys, self.acc_values, self.acc_container,
         self.acc_templates) = columns
        self.list_values = list(chain.from_iterable(self.live[i] for i in self.lists))
        self.list_offsets = [0]
        for i in self.lists:
            self.list_offsets.append(self.list_offsets[-1] + len(self.values[i]))

    def dirty(self) -> tuple[set[int], list[int]]:
        """(the containers that changed, the dicts among the rest that only changed length):
        one sweep of lengths, one of the watched dict items (a removed key reads as MISSING; a
        new value its template proves tensor-free is no change) and one of list items."""
        lens = list(map(len, self.live_by_address))
        resized: list[int] = []
        if lens != self.lens:
            resized = [self.by_address[i] for i, (a, b) in enumerate(zip(lens, self.lens))
                       if a != b]
        acc = self.acc_values
        now = list(map(dict.get, self.acc_dicts, self.acc_keys, repeat(MISSING, len(acc))))
        templates, owners = self.acc_templates, self.acc_container
        dirty = {owners[b] for b in _mismatches(list(map(_is, now, acc)))
                 if templates[b] is None or not harmless(templates[b], now[b])}
        lists = self.lists
        if lists:
            dirty.update(i for i in resized if self.keys[i] is None)
        if lists and not dirty.intersection(lists):
            flat = self.list_values
            current = chain.from_iterable(map(self.live.__getitem__, lists))
            wrong = list(compress(range(len(flat)), map(_not, map(_is, current, flat))))
            offsets = self.list_offsets
            dirty.update(lists[bisect_right(offsets, i) - 1] for i in wrong)
        elif lists:
            dirty.update(i for i in lists if not all(map(_is, self.live[i], self.values[i])))
        return dirty, [i for i in resized if i not in dirty]

    def appended(self, index: int) -> tuple[Any, ...] | None:
        """The keys a dict gained after its snapshot keys (which it still holds in order), or
        None when it changed otherwise or was re-based :data:`MAX_GROWS` times already."""
        keys, live = self.keys[index], self.live[index]
        if keys is None or len(live) <= len(keys) or self.grows.get(index, 0) >= MAX_GROWS:
            return None
        now = tuple(live)
        return now[len(keys):] if now[:len(keys)] == keys else None

    def grow(self, index: int, items: list[tuple[Any, Any, Any]]) -> None:
        """Re-base a dict that gained ``items`` (key, value, template) after its snapshot keys:
        later sweeps see it unchanged (its other items keep their snapshot values)."""
        self.grows[index] = self.grows.get(index, 0) + 1
        self.keys[index] += tuple(k for k, _v, _t in items)
        self.values[index] += tuple(v for _k, v, _t in items)
        self.lens[self.position[index]] = len(self.keys[index])
        self._accessors(self.live[index], index, items)
