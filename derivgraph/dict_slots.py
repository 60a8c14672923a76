"""Which watched items of many dicts provably still hold their snapshot values, read as raw words.

A dict item ``(d, k, v)`` is proven to hold ``v`` when ``d``'s table still has, at the entry where
``k`` lived when the plan was made, the key ``k`` and the value ``v``: in CPython 3.11's compact
dicts an entry of a dict's current table holding a (live) key and a value is that key's item
(keys are unique; a deleted entry has its key and value cleared). :class:`DictSlots` reads those
words, for every item, in three NumPy gathers and compares them with the expected addresses
(``id(k)``, ``id(v)``; both kept alive by the caller), without taking a reference to any value:
right after an engine's reload the value objects are cold memory, and reading them by
``dict.get`` touches each one. What the words do not prove is left to the caller's item rule.

The three gathers, each reading only memory the one before proved live:

1. every dict's table pointers (``ma_keys``, ``ma_values``): the same as at the plan, else the
   table was replaced (resized, cleared, converted) and every item goes to the item rule (the
   plan is stale: the caller builds a new one);
2. each keys object's layout (``dk_log2_size``, ``dk_log2_index_bytes``, ``dk_kind`` and the
   padding byte after them, as one ``int32``): the same, so each entry address is inside the
   current table, at the same entry;
3. each item's key word and value word (a split table's value in its values array).

The first gather also reads the length (``ma_used``, what ``len`` answers for a dict whose type
keeps ``dict.__len__``) of each dict the caller asks to be sized (:attr:`DictSlots.resized`:
whether one is not at its expected length), so that a caller checking every dict's length and
items reads the dicts' headers once; a dict whose type overrides ``__len__`` is sized by ``len``.

Only unicode-keyed tables (combined or split) are read: an ``str`` key's hash is fixed, so the
entry holding it is where a lookup finds it. Other tables' items, and keys absent when the plan
was made, are always handed to the item rule.

The reads assume, as every read of the guard does, that no other thread stores into the watched
dicts while they run. They are used only where a self-test at import proves the layout on the
running interpreter (:data:`AVAILABLE`: CPython 3.11 with the GIL); elsewhere :func:`dict_slots`
returns None and callers compare every item.
"""

from __future__ import annotations

import ctypes
import logging
import operator
import platform
import sys
import sysconfig
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from itertools import compress
from typing import Any

import numpy as np
import torch

__all__ = ["AVAILABLE", "DictSlots", "dict_slots"]

logger = logging.getLogger(__name__)

_WORD = 8
_USED = 16                   # ma_used in PyDictObject
_KEYS, _VALUES = 32, 40      # ma_keys, ma_values in PyDictObject
_LAYOUT = 8                  # dk_log2_size, dk_log2_index_bytes, dk_kind (+ a padding byte)
_NENTRIES = 24               # dk_nentries
_INDICES = 32                # dk_indices: 1 << dk_log2_index_bytes bytes, then the entries
_UNICODE, _SPLIT = 1, 2      # dk_kind of the tables read (DICT_KEYS_GENERAL is 0)
_ENTRY = 16                  # PyDictUnicodeEntry: key, value
_BASE, _LIMIT = _WORD, 1 << 48  # the addresses the views below reach
#: how many times :meth:`DictSlots.suspects` re-reads tables it found replaced before giving up
_TRIES = 3
#: how many times a dict's table is read where it is now (the first time, then each time it was
#: found replaced) before its items are left to the item rule for good
MAX_PROVES = 3


def _word(address: int) -> int:
    return ctypes.c_int64.from_address(address).value


def _memory(kind: type[ctypes._SimpleCData], dtype: type[np.signedinteger[Any]]) -> np.ndarray:
    """The address space ``[_BASE, _LIMIT)`` as an array of ``kind`` (no copy: only the
    elements a gather names are ever read)."""
    size = ctypes.sizeof(kind)
    return np.frombuffer((kind * ((_LIMIT - _BASE) // size)).from_address(_BASE), dtype=dtype)


def _at(address: int, size: int) -> int:
    """The index of ``address`` in a :func:`_memory` array of ``size``-byte elements."""
    return (address - _BASE) // size


def _used_is_len(d: dict[Any, Any]) -> bool:
    """Whether ``d``'s ``ma_used`` word is what ``len(d)`` answers (its type keeps
    ``dict.__len__``) and can be read."""
    return type(d).__len__ is dict.__len__ and id(d) + _USED < _LIMIT


class _Table:
    """One dict's table as it is now: its pointers, layout and where each key's entry is."""

    def __init__(self, d: dict[Any, Any]):
        self.keys, self.values = _word(id(d) + _KEYS), _word(id(d) + _VALUES)
        self.layout = ctypes.c_int32.from_address(self.keys + _LAYOUT).value
        kind = (self.layout >> 16) & 0xFF
        self.entries = self.keys + _INDICES + (1 << ((self.layout >> 8) & 0xFF))
        n = _word(self.keys + _NENTRIES)
        self.readable = kind == (_SPLIT if self.values else _UNICODE) and max(
            self.entries + _ENTRY * n, self.values + _WORD * n) < _LIMIT
        words = (ctypes.c_int64 * (2 * n)).from_address(self.entries) if n and self.readable \
            else ()
        self.index = {key: i for i, key in enumerate(words[::2])}  # key address -> entry
        self.index.pop(0, None)  # cleared entries

    def slot(self, key: Any) -> tuple[int, int] | None:
        """The addresses of ``key``'s key word and value word, or None (not read: not in the
        table, or not a table read here)."""
        i = self.index.get(id(key)) if type(key) is str else None
        if i is None:
            return None
        at = self.entries + _ENTRY * i
        return at, (self.values + _WORD * i if self.values else at + _WORD)


class DictSlots:
    """Items ``(dicts[j], keys[j])`` expected to hold ``values[j]`` (see the module docstring).

    Each dict has two head words (``ma_keys``, ``ma_values``) and a layout to read, and each
    item two words (its entry's key and value) with their expected values (``id(key)``,
    ``id(value)``). A table found replaced is read again where it is now (:meth:`_prove`)
    before any entry is read. A dict not read (not a unicode table, or one found replaced
    :data:`MAX_PROVES` times: an engine that rebuilds it on every reload) reads a constant
    instead of its words, and each of its items reads a word that never holds what is expected:
    its items are always suspects.

    ``sized`` (with their expected ``lengths``): the dicts whose lengths each :meth:`suspects`
    checks, its answer in :attr:`resized`."""

    def __init__(self, dicts: Sequence[dict[Any, Any]], keys: Sequence[Any],
                 values: Sequence[Any], sized: Sequence[dict[Any, Any]] = (),
                 lengths: Sequence[int] = ()):
        self._keys = list(keys)
        self._value_ids = [id(v) for v in values]
        self._dicts: list[dict[Any, Any]] = []
        self._items: list[list[int]] = []  # each dict's items
        position: dict[int, int] = {}
        for j, d in enumerate(dicts):
            t = position.setdefault(id(d), len(self._dicts))
            if t == len(self._dicts):
                self._dicts.append(d)
                self._items.append([])
            self._items[t].append(j)
        # the positions of each dict's item words in the words read
        self._places = [np.array([w for j in items for w in (2 * j, 2 * j + 1)], dtype=np.intp)
                        for items in self._items]
        self._proves = [0] * len(self._dicts)
        n, tables = len(self._keys), len(self._dicts)
        # ma_keys, ma_values of each table, then ma_used of each dict sized by its words
        by_words = [_used_is_len(d) for d in sized]
        words_sized = list(compress(zip(sized, lengths, strict=True), by_words))
        #: the dicts sized by ``len`` (:func:`_used_is_len` false), with their expected lengths
        self._len_sized = list(compress(zip(sized, lengths), map(operator.not_, by_words)))
        self._sized = [d for d, _ in words_sized]  # kept alive: their headers are read
        self._heads = np.array([0] * (2 * tables) + [_at(id(d) + _USED, _WORD) for d, _ in
                                                     words_sized], dtype=np.intp)
        self._heads_were = np.array([0] * (2 * tables) + [length for _, length in words_sized],
                                    dtype=np.int64)
        self._tables_words = 2 * tables  # the heads' words before the lengths
        #: whether the last :meth:`suspects` found a sized dict not at its expected length
        self.resized = False
        self._layouts = np.zeros(tables, dtype=np.intp)       # each keys object's layout
        self._layouts_were = np.zeros(tables, dtype=np.int32)
        self._words = np.zeros(2 * n, dtype=np.intp)          # each item's two words
        self._expected = np.zeros(2 * n, dtype=np.int64)
        for t in range(tables):
            self._prove(t)
        self._snap()
        self.usable = bool(self._item_of)

    def _prove(self, t: int) -> None:
        """Point dict ``t``'s reads at its table as it is now (or at the constant)."""
        d = self._dicts[t]
        self._proves[t] += 1
        table = _Table(d) if id(d) + _VALUES < _LIMIT and self._proves[t] <= MAX_PROVES \
            else None
        items, places = self._items[t], self._places[t]
        if table is None or not table.readable:
            self._heads[2 * t:2 * t + 2], self._layouts[t] = _CONSTANT, _CONSTANT_HALF
            self._heads_were[2 * t:2 * t + 2] = self._layouts_were[t] = 0
            self._words[places], self._expected[places] = _CONSTANT, -1
            return
        head = _at(id(d) + _KEYS, _WORD)
        self._heads[2 * t:2 * t + 2] = head, head + 1
        self._heads_were[2 * t:2 * t + 2] = table.keys, table.values
        self._layouts[t] = _at(table.keys + _LAYOUT, 4)
        self._layouts_were[t] = table.layout
        words: list[int] = []
        expected: list[int] = []
        keys, ids = self._keys, self._value_ids
        for j in items:
            slot = table.slot(keys[j])
            if slot is None:
                words += [_CONSTANT, _CONSTANT]
                expected += [-1, -1]
            else:
                words += [_at(slot[0], _WORD), _at(slot[1], _WORD)]
                expected += [id(keys[j]), ids[j]]
        self._words[places], self._expected[places] = words, expected

    def _snap(self) -> None:
        """The expected words as bytes, and the words read: those of the items with an entry
        (the others are suspects every time, :attr:`_always`)."""
        #: the last read's changed words (positions, expected words) and its suspects
        self._last: tuple[np.ndarray, np.ndarray, list[int]] | None = None
        self._heads_bytes = self._heads_were.tobytes()
        self._layouts_bytes = self._layouts_were.tobytes()
        unread = self._expected[0::2] == -1
        self._always: list[int] = np.flatnonzero(unread).tolist()
        read = np.flatnonzero(~unread)
        words = np.stack([2 * read, 2 * read + 1], axis=1).ravel()
        self._read, self._read_expected = self._words[words], self._expected[words]
        self._read_bytes = self._read_expected.tobytes()
        self._item_of: list[int] = np.repeat(read, 2).tolist()  # each word read -> its item

    def _reprove(self, tables: set[int]) -> None:
        for t in tables:
            self._prove(t)
        self._snap()

    def suspects(self) -> list[int] | None:
        """The positions (ascending) of the items not proven to hold their expected value, or
        None (nothing proven: tables kept being replaced while they were read again); either
        way :attr:`resized` says whether a sized dict is not at its expected length."""
        # before the words' reads (this makes Python objects)
        by_len = bool(self._len_sized) and any(len(d) != n for d, n in self._len_sized)
        for _ in range(_TRIES):
            # no Python object is made from the first read to the last (no collection, so
            # no finalizer can store into a dict between the checks and the entries' read)
            now = _WORDS.take(self._heads)
            read = now.tobytes()
            if read == self._heads_bytes:
                self.resized = by_len
            else:
                cut = self._tables_words  # the tables' heads, then the lengths
                self.resized = by_len or read[_WORD * cut:] != self._heads_bytes[_WORD * cut:]
                if read[:_WORD * cut] != self._heads_bytes[:_WORD * cut]:
                    changed = (now[:cut] != self._heads_were[:cut]).nonzero()[0]
                    self._reprove({h >> 1 for h in changed.tolist()})
                    continue
            now = _HALVES.take(self._layouts)
            if now.tobytes() != self._layouts_bytes:
                self._reprove(set((now != self._layouts_were).nonzero()[0].tolist()))
                continue
            now = _WORDS.take(self._read)
            if now.tobytes() == self._read_bytes:
                return self._always
            last = self._last
            if last is not None:  # the words the last read found changed, as expected again
                now.put(last[0], last[1])
                if now.tobytes() == self._read_bytes:
                    return last[2]  # every other word as expected: at most those items changed
                now = _WORDS.take(self._read)
            hits = (now != self._read_expected).nonzero()[0]
            found = list(dict.fromkeys(map(self._item_of.__getitem__, hits.tolist())))
            out = sorted(self._always + found) if self._always else found  # ascending
            self._last = hits, self._read_expected.take(hits), out
            return out
        return None


_WORDS = _memory(ctypes.c_int64, np.int64)
_HALVES = _memory(ctypes.c_int32, np.int32)
#: a word that is always 0: what a dict not read reads instead of its words
_ZERO = (ctypes.c_int64 * 1)()
_CONSTANT, _CONSTANT_HALF = _at(ctypes.addressof(_ZERO), _WORD), _at(ctypes.addressof(_ZERO), 4)


class _Probe:
    """A plain class for the self-test's split tables."""


def _store(obj: Any, value: Any) -> None:
    obj.attr = value  # the interpreter specialises this store after a few runs


def _self_test() -> bool:
    """The plan proves every unicode-keyed item of fresh dicts of each kind, and every kind of
    store the callers meet leaves the stored item (or, where the table is replaced, the whole
    plan) unproven, with every item it still proves holding its value."""
    if platform.python_implementation() != "CPython" or sys.version_info[:2] != (3, 11) \
            or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False

    def fresh() -> tuple[list[dict[Any, Any]], _Probe, torch.nn.Module]:
        probe = _Probe()
        probe.attr, probe.other = object(), object()  # a split table (the class's shared keys)
        ordered: OrderedDict[Any, Any] = OrderedDict(a=object(), b=object())
        defaulted: defaultdict[Any, Any] = defaultdict(list, a=object())
        module = torch.nn.Module()
        module.held = object()
        dicts = [{"a": object(), "b": object(), "c": object()}, probe.__dict__, ordered,
                 defaulted, module.__dict__, {1: object(), "a": object()}]
        return dicts, probe, module

    def repop(d: dict[Any, Any]) -> None:
        value = d.popitem()[1]
        d["z"] = value  # a new key in the popped entry, with the popped value

    def hot(probe: _Probe) -> None:
        for _ in range(24):
            _store(probe, object())

    def check(mutate: Any) -> bool:
        """Fresh, every item but the general table's is proven; after ``mutate``, exactly the
        items not holding their value or in a table not read are suspects."""
        dicts, probe, module = fresh()
        items = [(d, k, v) for d in dicts for k, v in d.items()]
        lengths = list(map(len, dicts))
        slots = DictSlots(*zip(*items), dicts, lengths)
        if slots.suspects() != [len(items) - 2, len(items) - 1] or slots.resized:
            return False
        mutate(dicts, probe, module)
        readable = {id(d): _Table(d).readable for d in dicts}
        return slots.suspects() == [j for j, (d, k, v) in enumerate(items)
                                    if dict.get(d, k, _Probe) is not v or not readable[id(d)]] \
            and slots.resized == (list(map(len, dicts)) != lengths)

    steps: list[Any] = [  # each: the stores of one kind
        lambda ds, p, m: ds[0].__setitem__("b", object()),
        lambda ds, p, m: ds[0].__delitem__("b"),
        lambda ds, p, m: ds[0].pop("a") and ds[0].__setitem__("a", object()),
        lambda ds, p, m: repop(ds[0]),
        lambda ds, p, m: ds[0].update({f"n{i}": i for i in range(40)}),  # resized
        lambda ds, p, m: ds[0].clear(),
        lambda ds, p, m: ds[0].__setitem__(2, 3),  # to general keys
        lambda ds, p, m: setattr(p, "other", object()),
        lambda ds, p, m: hot(p),  # hot, specialised
        lambda ds, p, m: delattr(p, "attr"),
        lambda ds, p, m: ds[1].__setitem__(5, 6),  # split to combined
        lambda ds, p, m: ds[2].__setitem__("a", object()),
        lambda ds, p, m: ds[2].pop("a") and ds[2].__setitem__("a", object()),
        lambda ds, p, m: ds[3].__setitem__("a", object()),
        lambda ds, p, m: ds[3].__getitem__("missing"),  # a default inserted
        lambda ds, p, m: setattr(m, "held", torch.zeros(1)),
        lambda ds, p, m: setattr(m, "held", 1),
        lambda ds, p, m: ds[5].__setitem__("a", object()),
    ]
    return all(map(check, steps))


def _available() -> bool:
    try:
        return _self_test()
    except (ValueError, TypeError, OverflowError, RuntimeError, AttributeError) as error:
        logger.debug("dict slots unavailable: %s", error)
        return False


#: whether :class:`DictSlots` is proven on this interpreter (see the module docstring)
AVAILABLE: bool = _available()


def dict_slots(dicts: Sequence[dict[Any, Any]], keys: Sequence[Any],
               values: Sequence[Any], sized: Sequence[dict[Any, Any]] = (),
               lengths: Sequence[int] = ()) -> DictSlots | None:
    """A :class:`DictSlots` over the items where the layout is proven and some item can be
    read (and sizing ``sized``), else None (the caller compares every item and length)."""
    if not AVAILABLE:
        return None
    slots = DictSlots(dicts, keys, values, sized, lengths)
    return slots if slots.usable else None

