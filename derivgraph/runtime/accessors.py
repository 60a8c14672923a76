"""Precompiled holder accessors: the per-reload host work of a plan as C-level sweeps.

Every holder of a derived tensor (an owner's ``_parameters``, ``_buffers``, ``__dict__`` or a
dict item) is resolved once, when the owners are walked, into a ``(dict, key)`` pair. After
that, reading every holder is one ``map(dict.get, dicts, keys)``, checking them one
``map(operator.is_, ...)``, and re-binding the ones the engine rebuilt one ``dict.__setitem__``
each, with no path walk: valid while the owners on the way are the same objects (the plan's
hop check, :class:`derivgraph.runtime.plan._Hops`, says so in one sweep too).

:class:`HolderTable` holds the accessors of every tensor holder; :class:`RefillTable` the
targets a refill copies from the engine (its fresh tensors are read through the table, checked
with one comparison of shape and dtype lists, and copied with one ``torch._foreach_copy_``).
Anything the table cannot prove (a holder moved to another registry, an owner rebuilt, a fresh
value of another layout) goes to the plan's per-entry path, which is the reference.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from derivgraph.paths import MISSING, Slot, holder_dict, step_into

if TYPE_CHECKING:
    from derivgraph.runtime.plan import Entry

__all__ = ["HolderTable", "HopTable", "RefillTable", "Taken", "holder_of"]

_is = operator.is_
_not = operator.not_
_shape = operator.attrgetter("shape")
_dtype = operator.attrgetter("dtype")
_is_meta = operator.attrgetter("is_meta")
_data_ptr = torch.Tensor.data_ptr
_NO_DICT: dict[str, Any] = {}  # the accessor of a holder without a dict entry: always "rebuilt"


#: classes (not modules, dicts or mappings) whose instances keep ``key`` in their ``__dict__``
#: and have no data descriptor (property, slot) of that name: ``getattr`` reads the dict
_IN_OBJ_DICT: set[tuple[type, str]] = set()


def locate(parent: Any, key: str) -> tuple[Any, tuple[Any, Any] | None]:
    """``(step_into(parent, key), holder_dict(parent, key))`` at the cost of two dict lookups
    for the common case: a rebuilt plain object of a class seen before."""
    cls = type(parent)
    if (cls, key) in _IN_OBJ_DICT:
        d = parent.__dict__
        if key in d:
            return d[key], (d, key)
    child, where = step_into(parent, key), holder_dict(parent, key)
    if where is not None and not isinstance(parent, (nn.Module, Mapping)) \
            and not key.isdigit() and where[0] is getattr(parent, "__dict__", None) \
            and not hasattr(type(getattr(cls, key, None)), "__set__"):  # no data descriptor
        _IN_OBJ_DICT.add((cls, key))
    return child, where


class HopTable:
    """Every hop from the model to the owners on a set of paths, resolved once.

    A hop is ``parent -> parent.part``; where the parent keeps the child in a dict (a
    module's registries or ``__dict__``, a dict, a plain object's ``__dict__``), checking it
    is one ``dict.get`` in a C-level sweep. When an engine rebuilt an owner on the way,
    :meth:`refresh` re-walks only the hops under it and says which owner paths changed.
    """

    def __init__(self, root: Any, paths: Iterable[str]):
        self.root = root
        self.objects: dict[str, Any] = {"": root}
        self.prefixes: list[str] = []
        self.parts: list[str] = []
        self.parents: list[str] = []
        self.children: dict[str, list[int]] = {"": []}
        self.dicts: list[dict[Any, Any]] = []
        self.keys: list[str] = []
        self.expected: list[Any] = []
        self.slow: list[int] = []  # hops without a dict entry: checked one by one
        for path in paths:
            parts = path.split(".") if path else []
            for i in range(len(parts)):
                prefix = ".".join(parts[: i + 1])
                if prefix in self.objects:
                    continue
                parent = ".".join(parts[:i])
                index = len(self.prefixes)
                self.prefixes.append(prefix)
                self.parts.append(parts[i])
                self.parents.append(parent)
                self.children.setdefault(parent, []).append(index)
                self.children.setdefault(prefix, [])
                self.dicts.append(_NO_DICT)
                self.keys.append(parts[i])
                self.expected.append(MISSING)
                self._resolve(index)

    def _resolve(self, index: int) -> None:
        parent = self.objects[self.parents[index]]
        part = self.parts[index]
        if parent is MISSING or parent is None:
            child, where = MISSING, None
        else:
            child, where = locate(parent, part)
        self.objects[self.prefixes[index]] = child
        self.expected[index] = child
        if where is None:
            self.dicts[index], self.keys[index] = _NO_DICT, part
            if parent is not MISSING and parent is not None and index not in self.slow:
                self.slow.append(index)
        else:
            self.dicts[index], self.keys[index] = where
            if index in self.slow:
                self.slow.remove(index)

    def _stale(self) -> list[int]:
        dicts, keys, expected = self.dicts, self.keys, self.expected
        bad = list(compress(range(len(dicts)), map(_not, map(
            _is, map(dict.get, dicts, keys), expected))))
        objects, prefixes, parents, parts = self.objects, self.prefixes, self.parents, self.parts
        bad += [i for i in self.slow
                if step_into(objects[parents[i]], parts[i]) is not objects[prefixes[i]]]
        return bad

    def intact(self) -> bool:
        """No owner on any path was rebuilt (one C-level sweep, plus the few non-dict hops)."""
        if not all(map(_is, map(dict.get, self.dicts, self.keys), self.expected)):
            return False
        objects, prefixes, parents, parts = self.objects, self.prefixes, self.parents, self.parts
        return all(step_into(objects[parents[i]], parts[i]) is objects[prefixes[i]]
                   for i in self.slow)

    def refresh(self) -> list[str]:
        """Re-walk the hops under every rebuilt one; returns the prefixes re-walked."""
        bad = self._stale()
        if not bad:
            return []
        done: set[int] = set()
        walked: list[str] = []
        stack = sorted(set(bad), reverse=True)
        while stack:
            index = stack.pop()
            if index in done:
                continue
            done.add(index)
            self._resolve(index)
            walked.append(self.prefixes[index])
            stack.extend(reversed(self.children[self.prefixes[index]]))
        return walked


def holder_of(owners: dict[str, Any], root: Any, entry: Entry) -> tuple[Any, dict[Any, Any], str]:
    """``(owner, dict, key)``: where an entry's holder lives, or ``(owner, _NO_DICT, name)`` when
    no dict entry holds it (properties, ``__slots__``, list items, a missing owner): those
    take the per-entry path."""
    path = entry.node.owner_path
    owner = owners.get(path, MISSING) if path else root
    name = entry.node.decl.name
    if owner is MISSING or owner is None:
        return owner, _NO_DICT, name
    where = locate(owner, name)[1]
    return (owner, where[0], where[1]) if where is not None else (owner, _NO_DICT, name)


def _store_binds(entry: Entry, owner: Any, d: dict[Any, Any]) -> bool:
    """Whether ``d[key] = storage`` binds the entry exactly as
    :func:`~derivgraph.paths.set_slot` would: ``d`` is the registry of the entry's slot."""
    if d is _NO_DICT or entry.slot is Slot.ELEMENT:
        return False
    if isinstance(owner, nn.Module):
        registry = {Slot.PARAMETER: "_parameters", Slot.BUFFER: "_buffers"}.get(entry.slot)
        want = owner.__dict__ if registry is None else owner.__dict__.get(registry)
        if entry.slot is Slot.BUFFER and entry.node.decl.persistent == (
                entry.node.decl.name in owner._non_persistent_buffers_set):
            return False  # set_slot would also fix the persistence flag
        return d is want
    return entry.slot is Slot.ATTRIBUTE


class HolderTable:
    """The accessors of every tensor holder (derived scalars and tuple items excluded)."""

    __slots__ = ("entries", "dicts", "keys", "storages", "ptrs", "fast", "_by_owner")

    def __init__(self, entries: Sequence[Entry],
                 where: Callable[[Entry], tuple[Any, dict[Any, Any], str]]):
        self.entries = list(entries)
        self.dicts: list[dict[Any, Any]] = []
        self.keys: list[str] = []
        self.fast: list[bool] = []  # a stale holder is re-bound by one dict store
        for entry in self.entries:
            owner, d, key = where(entry)
            self.dicts.append(d)
            self.keys.append(key)
            self.fast.append(_store_binds(entry, owner, d))
        self.storages = [e.storage for e in self.entries]
        self.ptrs = [e.startup_ptr for e in self.entries]
        self._by_owner: dict[str, list[int]] = {}
        for i, entry in enumerate(self.entries):
            self._by_owner.setdefault(entry.node.owner_path, []).append(i)

    def __len__(self) -> int:
        return len(self.entries)

    def current(self) -> list[Any]:
        """What every holder holds now (None where the key is gone)."""
        return list(map(dict.get, self.dicts, self.keys))

    def intact(self, current: list[Any] | None = None) -> bool:
        """Every holder still holds the startup object (one C-level sweep)."""
        cur = self.current() if current is None else current
        return all(map(_is, cur, self.storages))

    def at_startup_addresses(self) -> bool:
        """Every storage still at its startup address (one C-level sweep)."""
        return list(map(_data_ptr, self.storages)) == self.ptrs

    def stale(self, current: list[Any]) -> list[int]:
        """Indices of the holders that hold another object than the startup one."""
        return list(compress(range(len(current)), map(_not, map(_is, current, self.storages))))

    def rebind(self, stale: list[int], current: list[Any]) -> tuple[int, list[int]]:
        """Store the startup object back where the engine left a new one in the same registry.

        Returns (how many were stored, the indices left for the per-entry path: a holder
        gone from its registry or outside a dict).
        """
        done, rest = 0, []
        dicts, keys, storages, fast = self.dicts, self.keys, self.storages, self.fast
        for i in stale:
            if fast[i] and current[i] is not None:
                dicts[i][keys[i]] = storages[i]
                done += 1
            else:
                rest.append(i)
        return done, rest

    def under(self, owners: Iterable[str]) -> list[int]:
        """Indices of the holders whose owner is at one of the paths ``owners``."""
        by_owner = self._by_owner
        return [i for path in owners for i in by_owner.get(path, ())]

    def refresh(self, indices: list[int],
                where: Callable[[Entry], tuple[Any, dict[Any, Any], str]]) -> bool:
        """Re-resolve the accessors of ``indices`` (owners rebuilt, or re-bound one by one);
        returns whether any holder changed between a dict store and the per-entry path."""
        flipped = False
        for i in indices:
            entry = self.entries[i]
            owner, self.dicts[i], self.keys[i] = where(entry)
            fast = _store_binds(entry, owner, self.dicts[i])
            flipped |= fast != self.fast[i]
            self.fast[i] = fast
        return flipped


class Taken:
    """The outcome of a refill's fast read: which targets take the engine's value."""

    __slots__ = ("ours", "theirs", "mask", "nbytes", "constants")

    def __init__(self, ours: list[torch.Tensor], theirs: list[torch.Tensor], mask: tuple[bool, ...],
                 nbytes: int, constants: bool):
        self.ours, self.theirs, self.mask = ours, theirs, mask
        self.nbytes, self.constants = nbytes, constants


class RefillTable:
    """The refill targets (derived tensors computed by the pass, constants, engine tensors) as
    positions in a :class:`HolderTable`, with their layouts and sizes precomputed."""

    __slots__ = ("ids", "index", "storages", "shapes", "dtypes", "nbytes", "is_constant",
                 "engine", "complete")

    def __init__(self, table: HolderTable, targets: list[str], constants: set[str],
                 engine: set[str]):
        position = {e.node.id: i for i, e in enumerate(table.entries)}
        usable = [t for t in targets if t in position and table.fast[position[t]]]
        self.complete = len(usable) == len(targets)  # else: the per-entry path
        self.ids = usable
        self.index = [position[t] for t in usable]
        self.storages = [table.storages[i] for i in self.index]
        self.shapes = [s.shape for s in self.storages]
        self.dtypes = [s.dtype for s in self.storages]
        self.nbytes = [s.numel() * s.element_size() for s in self.storages]
        self.is_constant = [t in constants for t in usable]
        self.engine = [t in engine for t in usable]

    def take(self, current: list[Any]) -> Taken | None:
        """The engine's fresh tensors, checked in a few C-level sweeps; None when any target
        needs the per-entry path (a missing holder, another layout, a meta tensor)."""
        if not self.complete:
            return None
        index = self.index
        if not index:
            return Taken([], [], (), 0, False)
        picked = [current[i] for i in index] if len(index) < 2 else \
            list(operator.itemgetter(*index)(current))
        if any(map(_is, picked, repeat(None))):
            return None
        mask = tuple(map(_not, map(_is, picked, self.storages)))
        if all(mask):
            theirs, ours, shapes, dtypes = picked, self.storages, self.shapes, self.dtypes
            nbytes = sum(self.nbytes)
        else:
            if any(compress(self.engine, map(_not, mask))):
                return None  # an engine tensor not rebuilt: check_refillable decides
            theirs = list(compress(picked, mask))
            ours = list(compress(self.storages, mask))
            shapes = list(compress(self.shapes, mask))
            dtypes = list(compress(self.dtypes, mask))
            nbytes = sum(compress(self.nbytes, mask))
        try:
            if list(map(_shape, theirs)) != shapes or list(map(_dtype, theirs)) != dtypes \
                    or any(map(_is_meta, theirs)):
                return None
        except AttributeError:  # not a tensor
            return None
        return Taken(ours, theirs, mask, nbytes, any(compress(self.is_constant, mask)))
