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

Where the interpreter's dict version tags are proven
(:func:`~derivgraph.dict_versions.watch_dicts`), the dicts are not swept whole: one gather of
their tags names the dicts mutated since the last :meth:`Sweep.settle`, and only those (with the
ones still differing from their snapshot at the last settle) get the length and item checks
above, with the same verdicts (every swept item read by its key, in whatever order the keys now
are, from flat columns built once per set of such dicts; where the dicts' raw table words are
proven, :mod:`derivgraph.dict_slots`, an item whose entry still holds its key and snapshot value
is proven by those words, and only the others are read by key). :meth:`Sweep.settle` (after the
restore's own writes, which store into dicts too) takes the current tags as the new base and
keeps re-checking every dict that does not hold exactly its snapshot items by identity (a
harmless new value is re-checked on every sweep, as without tags). Lists are swept as before;
without proven tags every container is swept as before.

Where the raw table words prove the items and there are at most :data:`WHOLE_ITEMS` of them,
the tags are not read at all: every sweep checks every dict's length and proves every item by
its words at once (:meth:`Sweep._dirty_whole`), reading by key only the items the words do not
prove, with the verdicts of the sweep of every container. An engine's reload moves most of a
small model's watched dicts anyway (vLLM's tiny Llama: 30 of 108, 351 of 520 items); right after
it every call runs cold, and one proof of all the items costs less than the tag read, the
set of moved dicts and the settle that the tags need around the proof of the moved ones.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import Any

from derivgraph.dict_slots import DictSlots, dict_slots
from derivgraph.dict_versions import DictVersions, watch_dicts
from derivgraph.guard.holders import MISSING
from derivgraph.guard.template import harmless

__all__ = ["Sweep"]

_is, _not, _get = operator.is_, operator.not_, dict.get

#: how many times one container may be re-based (an engine adding keys on every reload would
#: otherwise grow the accessors without bound; past this its container is diffed every time)
MAX_GROWS = 4
#: how many sets of moved dicts keep their flat accessor columns (:meth:`Sweep._gather`)
MAX_GATHERS = 8
#: up to how many swept dict items every sweep proves all of them by their raw words instead of
#: reading the version tags first (:meth:`Sweep._dirty_whole`); 0: the tags wherever proven
WHOLE_ITEMS = 4096


def _mismatches(flags: list[bool]) -> list[int]:
    """The indices of the False flags (one C-level scan per hit)."""
    out: list[int] = []
    i = -1
    for _ in range(flags.count(False)):
        i = flags.index(False, i + 1)
        out.append(i)
    return out


def _differing(dicts: list[dict[Any, Any]], keys: list[Any], values: list[Any]) -> list[int]:
    """The positions of the items ``dicts[j][keys[j]]`` not holding ``values[j]`` (a missing key
    reads as MISSING): one streaming sweep, each value compared as it is read and let go at once
    (no list of every value, whose release would touch each one again)."""
    return _mismatches(list(map(_is, map(_get, dicts, keys, repeat(MISSING, len(keys))), values)))


@dataclass
class _Gather:
    """The columns :meth:`Sweep._compare` reads for one set of dicts: the dicts and their
    snapshot lengths, then their accessors (indices, dicts, keys, snapshot values) in order, and
    the raw-word proof of those items (None: every item is read by key)."""

    dicts: list[dict[Any, Any]]
    lengths: list[int]
    acc: list[int]
    acc_dicts: list[dict[Any, Any]]
    acc_keys: list[Any]
    acc_values: list[Any]
    slots: DictSlots | None = None
    #: the last suspects and their columns (dicts, keys, snapshot values)
    columns: tuple[list[int], list[Any], list[Any], list[Any]] = ([], [], [], [])

    def __post_init__(self) -> None:
        self.prove()

    def prove(self) -> None:
        """Take the raw-word proof of the items from the dicts' tables as they are now (sizing
        the dicts too: :attr:`DictSlots.resized <derivgraph.dict_slots.DictSlots.resized>`)."""
        self.slots = dict_slots(self.acc_dicts, self.acc_keys, self.acc_values, self.dicts,
                                self.lengths)

    def differing(self) -> list[int]:
        """The positions of the accessors not holding their snapshot value (:func:`_differing`),
        read by key only where the raw words do not prove the item (a table replaced since the
        proof was made: every item, and a new proof for the next sweep)."""
        slots = self.slots
        suspects = None if slots is None else slots.suspects()
        if suspects is None:
            if slots is not None:
                self.prove()  # the tables moved: prove the items where they are now
            return _differing(self.acc_dicts, self.acc_keys, self.acc_values)
        if not suspects:
            return []
        if suspects != self.columns[0]:  # a reload suspects the same items every time
            dicts, keys, values = self.acc_dicts, self.acc_keys, self.acc_values
            self.columns = (suspects, list(map(dicts.__getitem__, suspects)),
                            list(map(keys.__getitem__, suspects)),
                            list(map(values.__getitem__, suspects)))
        suspects, dicts, keys, values = self.columns
        return [suspects[j] for j in _differing(dicts, keys, values)]


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
        self.tags: DictVersions | None = None
        #: every dict, when each sweep proves all their items at once (see _dirty_whole)
        self.whole: tuple[int, ...] | None = None
        self.tagged: list[int] = []  # the container of each tag position
        self.acc_of: list[list[int]] = []  # each container's accessor indices
        self.length: list[int] = []  # each container's snapshot length
        self.recheck: set[int] = set()  # dicts not identical to their snapshot at the last settle
        self.read: set[int] = set()  # the dicts the last tagged sweep checked
        self.differ: set[int] = set()  # those of them not identical to their snapshot
        self.gathers: dict[tuple[int, ...], _Gather] = {}  # by set of dicts (see _gather)

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
        self.acc_of = [[] for _ in self.live]
        for b, i in enumerate(self.acc_container):
            self.acc_of[i].append(b)
        self.length = list(map(len, self.live))
        self.tagged = [i for i in self.by_address if self.keys[i] is not None]
        self.recheck, self.read, self.differ = set(), set(), set()
        self.gathers = {}
        self.whole = None
        if self.tagged and len(self.acc_dicts) <= WHOLE_ITEMS:
            whole = tuple(self.tagged)
            if self._gather(whole).slots is not None:  # the raw words prove the items
                self.whole = whole
        self.tags = watch_dicts([self.live[i] for i in self.tagged]) \
            if self.tagged and self.whole is None else None

    def dirty(self) -> tuple[set[int], list[int]]:
        """(the containers that changed, the dicts among the rest that only changed length):
        one sweep of lengths, one of the watched dict items (a removed key reads as MISSING; a
        new value its template proves tensor-free is no change) and one of list items; with
        version tags, the lengths and items of the dicts whose tag moved, and the lists'."""
        if self.whole is not None:
            return self._dirty_whole(self.whole)
        if self.tags is not None:
            return self._dirty_tagged(self.tags)
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
        self._lists(dirty, [i for i in resized if self.keys[i] is None])
        return dirty, [i for i in resized if i not in dirty]

    def _lists(self, dirty: set[int], resized: list[int]) -> None:
        """Add the lists that changed to ``dirty`` (``resized``: the lists whose length did)."""
        lists = self.lists
        dirty.update(resized)
        if lists and not dirty.intersection(lists):
            flat = self.list_values
            current = chain.from_iterable(map(self.live.__getitem__, lists))
            wrong = list(compress(range(len(flat)), map(_not, map(_is, current, flat))))
            offsets = self.list_offsets
            dirty.update(lists[bisect_right(offsets, i) - 1] for i in wrong)
        elif lists:
            dirty.update(i for i in lists if not all(map(_is, self.live[i], self.values[i])))

    # ---- every dict proven by its raw words -----------------------------------------------------

    def _dirty_whole(self, order: tuple[int, ...]) -> tuple[set[int], list[int]]:
        """:meth:`dirty` over every dict (``order``) and list, each dict's items proven by their
        raw words where they can be (:meth:`_compared`): no version tag read, nothing to
        settle."""
        resized, wrong, now = self._compared(order)
        return self._verdict(resized, wrong, now)

    def _verdict(self, resized: list[int], wrong: list[int],
                 now: list[Any]) -> tuple[set[int], list[int]]:
        """:meth:`dirty`'s answer from the compared dicts (:meth:`_compared`) and the lists."""
        templates, owners = self.acc_templates, self.acc_container
        dirty = {owners[b] for b, v in zip(wrong, now)
                 if templates[b] is None or not harmless(templates[b], v)} if wrong else set()
        if self.lists:
            live, lens, position = self.live, self.lens, self.position
            self._lists(dirty, [i for i in self.lists if len(live[i]) != lens[position[i]]])
        return dirty, [i for i in resized if i not in dirty] if resized else resized

    # ---- with version tags ---------------------------------------------------------------------

    def _dirty_tagged(self, tags: DictVersions) -> tuple[set[int], list[int]]:
        """:meth:`dirty` checking only the dicts whose tag moved (and :attr:`recheck`)."""
        moved = self.recheck.union(map(self.tagged.__getitem__, tags.changed()))
        self.read, self.differ = moved, set()
        resized: list[int] = []
        wrong: list[int] = []
        now: list[Any] = []
        if moved:
            resized, wrong, now = self._compare(moved)
            self.differ = {*resized, *map(self.acc_container.__getitem__, wrong)}
        return self._verdict(resized, wrong, now)

    def _compare(self, dicts: set[int]) -> tuple[list[int], list[int], list[Any]]:
        """:meth:`_compared` for the set ``dicts`` (in index order)."""
        return self._compared(tuple(sorted(dicts)))

    def _compared(self, order: tuple[int, ...]) -> tuple[list[int], list[int], list[Any]]:
        """For the dicts ``order``: those whose length changed, the swept items (accessor
        indices) not holding their snapshot value, and the values they hold now: every swept
        item of them read by its key (whatever the order of their keys: vLLM's reload
        re-registers a layer's ``weight`` after its ``bias`` every time) unless its raw words
        prove it (:meth:`_Gather.differing`), from flat columns built once per set of dicts
        (:meth:`_gather`)."""
        gather = self._gather(order)
        slots = gather.slots
        hits = gather.differing()  # the few hits read their values again below
        # the lengths: read with the proof's words (DictSlots.resized) where there is a proof
        resized = [] if slots is not None and not slots.resized else [
            i for i, n, was in zip(order, map(len, gather.dicts), gather.lengths) if n != was]
        acc, dicts, keys = gather.acc, gather.acc_dicts, gather.acc_keys
        if not hits:
            return resized, [], []
        return resized, [acc[j] for j in hits], [dicts[j].get(keys[j], MISSING) for j in hits]

    def _gather(self, order: tuple[int, ...]) -> _Gather:
        """The flat accessor columns of the dicts ``order`` (built once per set of dicts: a
        reload moves the same dicts every time; :meth:`grow` drops them)."""
        gather = self.gathers.get(order)
        if gather is None:
            if len(self.gathers) >= MAX_GATHERS:
                self.gathers.clear()
            acc = list(chain.from_iterable(map(self.acc_of.__getitem__, order)))
            gather = self.gathers[order] = _Gather(
                list(map(self.live.__getitem__, order)), list(map(self.length.__getitem__, order)),
                acc, list(map(self.acc_dicts.__getitem__, acc)),
                list(map(self.acc_keys.__getitem__, acc)),
                list(map(self.acc_values.__getitem__, acc)))
        return gather

    def settle(self, *, unwritten: bool = False) -> None:
        """Take the current tags as the base (after the restore's writes): a dict mutated since
        the last base is re-checked on every sweep until it is identical to its snapshot.
        ``unwritten``: nothing was stored into a watched dict since the last :meth:`dirty`, so
        what it found holds (no second read of the tags or the dicts: the tags the sweep read
        are taken, which any later store moves past)."""
        tags = self.tags
        if tags is None:
            return
        if unwritten:
            candidates, differ = self.read, self.differ
        else:
            candidates = self.recheck.union(map(self.tagged.__getitem__, tags.changed()))
            resized, wrong, _ = self._compare(candidates)
            differ = {*resized, *map(self.acc_container.__getitem__, wrong)}
        if not candidates.difference(self.recheck):
            return  # the re-checked dicts were not touched since: they still differ
        if unwritten:
            tags.adopt()  # the tags the sweep read, before it proved those dicts: no re-read
        else:
            tags.rebase()
        self.recheck = differ

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
        self.gathers.clear()
        self.keys[index] += tuple(k for k, _v, _t in items)
        self.values[index] += tuple(v for _k, v, _t in items)
        self.lens[self.position[index]] = self.length[index] = len(self.keys[index])
        start = len(self.acc_dicts)
        self._accessors(self.live[index], index, items)
        self.acc_of[index].extend(range(start, len(self.acc_dicts)))
