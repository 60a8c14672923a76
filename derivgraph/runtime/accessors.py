"""Precompiled holder accessors: the per-reload host work of a plan as C-level sweeps.

Every holder of a derived tensor (an owner's ``_parameters``, ``_buffers``, ``__dict__`` or a
dict item) is resolved once, when the owners are walked, into a ``(dict, key)`` pair. After
that, reading every holder is one ``map(dict.get, dicts, keys)``, checking them one
``map(operator.is_, ...)``, and re-binding the ones the engine rebuilt one ``dict.__setitem__``
each, with no path walk: valid while the owners on the way are the same objects (the plan's
hop check, :class:`HopTable`, says so in one sweep too; when an engine rebuilt an owner, only
the hops under it are walked again).

:class:`HolderTable` holds the accessors of every tensor holder. Anything a table cannot
prove (a holder moved to another registry, a holder outside a dict) goes to the per-entry path
of :class:`derivgraph.runtime.holders.Holders`, which is the reference.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, count, islice, repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from torch import nn

from derivgraph.addresses import Addresses, AtAddresses
from derivgraph.compiler.owners import PathReader, RegistryReads, registries_holding
from derivgraph.paths import MISSING, Slot, holder_dict, step_into
from derivgraph.runtime.entry import HeldEntries, not_taken
from derivgraph.runtime.watch import ItemWatch, watch_items

if TYPE_CHECKING:
    from derivgraph.runtime.entry import Entry, TableColumn

__all__ = ["NO_DICT", "HolderTable", "HopTable", "by_name", "changes", "column_read",
           "column_rows", "column_spans", "holder_dicts", "holder_of", "HeldColumn",
           "holders_of", "locate", "not_taken", "PathReads", "ProvenOwners", "read_paths",
           "same_owners"]

_is = operator.is_
_not = operator.not_
_DICT = operator.attrgetter("__dict__")
_first, _last = operator.itemgetter(0), operator.itemgetter(2)
NO_DICT: dict[str, Any] = {}  # the accessor of a holder without a dict entry: always "rebuilt"


def changes(sweep: Iterable[bool], size: int) -> list[int]:
    """Indices of the False items of an identity sweep of ``size`` items
    (``map(operator.is_, ...)``), each item read once: ``all()`` (the common case, nothing
    changed: its cost alone) stops at the first change, then the rest of the same sweep is
    read to its end; nothing is read twice."""
    sweep = iter(sweep)
    if all(sweep):  # consumes the sweep up to and including the first change
        return []
    rest = list(map(_not, sweep))  # True where an item after the first change changed
    first = size - len(rest) - 1
    return [first, *compress(count(first + 1), rest)]


#: classes (not modules, dicts or mappings) whose instances keep ``key`` in their ``__dict__``
#: and have no data descriptor (property, slot) of that name: ``getattr`` reads the dict
_IN_OBJ_DICT: set[tuple[type, str]] = set()


def locate(parent: Any, key: str) -> tuple[Any, tuple[Any, Any] | None]:
    """``(step_into(parent, key), holder_dict(parent, key))`` at the cost of two dict lookups
    for the common case: a rebuilt plain object of a class seen before."""
    if isinstance(parent, nn.Module):  # the registries step_into and holder_dict both read
        d = parent.__dict__
        for registry in (d["_modules"], d["_parameters"], d["_buffers"], d):
            if key in registry:
                return registry[key], (registry, key)
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


class _WatchedDicts:
    """The tags of a table's holder dicts (``dicts``; ``NO_DICT`` where an item has none),
    snapshotted by :meth:`settle` after every item was proven: ``watch``, the
    :class:`~derivgraph.runtime.watch.ItemWatch` (None until built), ``watchable``, False once
    :func:`~derivgraph.runtime.watch.watch_items` refused the table (its items are fixed once
    made, so it would refuse again)."""

    __slots__ = ()
    dicts: list[dict[Any, Any]]
    watch: ItemWatch | None
    watchable: bool

    def settle(self) -> None:
        """Every item was just proven (or walked, or re-bound): snapshot their dicts' tags."""
        if self.watch is not None:
            self.watch.settle()
        elif self.watchable:
            self.watch = watch_items(self.dicts, NO_DICT)
            self.watchable = self.watch is not None


class HopTable(_WatchedDicts):
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
        # a walked prefix's hops, in order (a prefix no hop starts from: absent)
        self.children: dict[str, list[int]] = {}
        self.dicts: list[dict[Any, Any]] = []
        self.keys: list[str] = []
        self.expected: list[Any] = []
        self.slow: list[int] = []  # hops without a dict entry: checked one by one
        self.watch: ItemWatch | None = None  # built after a check proved every hop
        # False once watch_items refused the table (too few hops, no tags): its hops are fixed
        # after this constructor, so it would refuse again; settle then asks no more
        self.watchable = True
        objects = self.objects
        run: list[tuple[str, str, str]] = []  # single hops from owners walked before it
        for path in dict.fromkeys(paths):  # each path once (owners hold several tensors)
            if path in objects:
                continue  # a prefix of a path walked before: every hop to it is resolved
            parent, _, part = path.rpartition(".")
            if parent in objects:  # the usual case (a sibling's owner walked): one new hop
                run.append((parent, path, part))
                continue
            self._add_run(run)
            run = []
            if parent in objects:
                run.append((parent, path, part))
                continue
            parts = path.split(".")
            for i in range(len(parts)):
                prefix = ".".join(parts[: i + 1])
                if prefix not in objects:
                    self._add(".".join(parts[:i]), prefix, parts[i])
        self._add_run(run)

    def _add_run(self, run: list[tuple[str, str, str]]) -> None:
        """``_add`` of each ``(parent, prefix, part)`` in order, every parent walked before:
        the hops of one module parent whose ``_modules`` holds every part (a layer list's
        layers) resolved in one sweep each, any other hop one by one (in index order)."""
        if len(run) < 2:
            for hop in run:
                self._add(*hop)
            return
        start = len(self.prefixes)
        parents, prefixes, parts = (list(column) for column in zip(*run))
        self.prefixes += prefixes
        self.parts += parts
        self.parents += parents
        self.dicts += repeat(NO_DICT, len(run))
        self.keys += parts
        self.expected += repeat(MISSING, len(run))
        children, objects = self.children, self.objects
        end = start + len(run)
        by_parent: dict[str, list[int]] = {}
        if parents.count(parents[0]) == len(parents):  # one parent: every hop, in order (so
            by_parent[parents[0]] = list(range(start, end))  # are the objects added below)
        else:
            objects.update(zip(prefixes, repeat(MISSING)))  # insertion order: the hops' order
            for index, parent in enumerate(parents, start):
                by_parent.setdefault(parent, []).append(index)
        alone: list[int] = []
        for parent, indices in by_parent.items():
            children.setdefault(parent, []).extend(indices)
            owner = objects[parent]
            whole = len(indices) == len(run)  # indices: start .. end - 1
            keys = parts if whole else [parts[i - start] for i in indices]
            modules = owner.__dict__["_modules"] if issubclass(type(owner), nn.Module) else None
            if modules is None or not all(map(modules.__contains__, keys)):
                alone += indices
                continue
            found = list(map(modules.__getitem__, keys))
            objects.update(zip(prefixes if whole else [prefixes[i - start] for i in indices],
                               found))
            if whole:
                self.expected[start:end] = found
                self.dicts[start:end] = repeat(modules, len(run))
                continue
            deque(map(operator.setitem, repeat(self.expected), indices, found), 0)
            deque(map(operator.setitem, repeat(self.dicts), indices, repeat(modules)), 0)
        for index in sorted(alone):
            self._resolve(index)

    def _add(self, parent: str, prefix: str, part: str) -> None:
        """The hop ``parent -> prefix`` (``prefix`` is ``parent.part``), resolved now."""
        index = len(self.prefixes)
        self.prefixes.append(prefix)
        self.parts.append(part)
        self.parents.append(parent)
        self.children.setdefault(parent, []).append(index)
        self.dicts.append(NO_DICT)
        self.keys.append(part)
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
        if where is None:  # checked one by one; the C-level sweep reads None from NO_DICT
            self.dicts[index], self.keys[index], self.expected[index] = NO_DICT, part, None
            if parent is not MISSING and parent is not None and index not in self.slow:
                self.slow.append(index)
        else:
            self.dicts[index], self.keys[index] = where
            if index in self.slow:
                self.slow.remove(index)

    def _stale(self) -> list[int]:
        """Indices of the hops whose parent now holds another child: one sweep, or only the
        hops in the dicts whose version tag moved (:attr:`watch`)."""
        dicts, keys, expected = self.dicts, self.keys, self.expected
        if self.watch is None:
            bad = changes(map(_is, map(dict.get, dicts, keys), expected), len(dicts))
        else:
            bad = [i for i in self.watch.suspects() if dicts[i].get(keys[i]) is not expected[i]]
        if self.slow:  # hops outside a dict, one by one
            objects, prefixes, parents, parts = \
                self.objects, self.prefixes, self.parents, self.parts
            bad += [i for i in self.slow
                    if step_into(objects[parents[i]], parts[i]) is not objects[prefixes[i]]]
        return bad

    def intact(self) -> bool:
        """No owner on any path was rebuilt (one C-level sweep, plus the few non-dict hops;
        the version tags are not trusted here: this is the reference check)."""
        if not all(map(_is, map(dict.get, self.dicts, self.keys), self.expected)):
            return False
        if not self.slow:
            return True
        objects, prefixes, parents, parts = self.objects, self.prefixes, self.parents, self.parts
        return all(step_into(objects[parents[i]], parts[i]) is objects[prefixes[i]]
                   for i in self.slow)

    def refresh(self) -> list[str]:
        """Re-walk the hops under every rebuilt one; returns the prefixes re-walked."""
        bad = self._stale()  # empty in the common case
        if not bad:
            watch = self.watch
            if watch.moved if watch is not None else self.watchable:
                self.settle()
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
            stack.extend(reversed(self.children.get(self.prefixes[index], ())))
        self.watch = None  # other dicts now: watched afresh, every hop proven
        self.settle()
        return walked


def holder_of(owners: dict[str, Any], root: Any, entry: Entry) -> tuple[Any, dict[Any, Any], str]:
    """``(owner, dict, key)``: where an entry's holder lives, or ``(owner, NO_DICT, name)`` when
    no dict entry holds it (properties, ``__slots__``, list items, a missing owner): those
    take the per-entry path."""
    path = entry.node.owner_path
    owner = owners.get(path, MISSING) if path else root
    name = entry.node.decl.name
    if owner is MISSING or owner is None:
        return owner, NO_DICT, name
    where = locate(owner, name)[1]
    return (owner, where[0], where[1]) if where is not None else (owner, NO_DICT, name)


#: the ``nn.Module`` registry of each registered slot (any other slot: the instance dict)
_REGISTRIES = {Slot.PARAMETER: "_parameters", Slot.BUFFER: "_buffers"}


def _store_binds(entry: Entry, owner: Any, d: dict[Any, Any]) -> bool:
    """Whether ``d[key] = storage`` binds the entry exactly as
    :func:`~derivgraph.paths.set_slot` would: ``d`` is the registry of the entry's slot."""
    if d is NO_DICT or entry.slot is Slot.ELEMENT:
        return False
    if isinstance(owner, nn.Module):
        registry = _REGISTRIES.get(entry.slot)
        want = owner.__dict__ if registry is None else owner.__dict__.get(registry)
        if entry.slot is Slot.BUFFER and entry.node.decl.persistent == (
                entry.node.decl.name in owner._non_persistent_buffers_set):
            return False  # set_slot would also fix the persistence flag
        return d is want
    return entry.slot is Slot.ATTRIBUTE


#: the registry (:func:`~derivgraph.compiler.owners.registries_holding`'s ``k``) a dict store
#: binds a slot in, on a module (a buffer's store also depends on its persistence flag)
_STORE_REGISTRY = {Slot.PARAMETER: 1, Slot.ATTRIBUTE: 3}

_name, _owner_path = operator.attrgetter("node.decl.name"), operator.attrgetter("owner_path")
_slot = operator.attrgetter("slot")
_id, _storage = operator.attrgetter("id"), operator.attrgetter("storage")
_startup_ptr = operator.attrgetter("startup_ptr")


def by_name(names: Iterable[str]) -> dict[str, list[int]]:
    """The positions of each name (a stamped template's column: one name on every layer),
    the names in the order they first appear. Where ``names`` repeat one run of distinct
    ``str`` s (a stamped table's rows), the positions are ranges (:func:`_periodic`)."""
    periodic = _periodic(names) if type(names) is list else None
    if periodic is not None:
        return periodic
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return groups


def _periodic(names: list[str]) -> dict[str, list[int]] | None:
    """:func:`by_name` of ``names`` where they are ``head`` repeated whole (``head``: the names
    before the first name's next position, distinct, each a ``str``): the name at position
    ``j`` of ``head`` is at ``j``, ``j + p``, ... (``p``: its length) and nowhere else, and the
    names first appear in ``head``'s order; one list compare in C. None where they are not."""
    n = len(names)
    if n < 2:
        return None
    try:
        p = names.index(names[0], 1)
    except ValueError:
        return None
    head = names[:p]
    if n % p or set(map(type, head)) != {str} or len(set(head)) != p \
            or names != head * (n // p):
        return None
    return {name: range(j, n, p) for j, name in enumerate(head)}


def put_rows(out: list[Any] | bytearray, rows: Sequence[int], values: Sequence[Any]) -> None:
    """``out[rows[k]] = values[k]`` for every k: one extended-slice assignment where ``rows``
    is a ``range`` of non-negative positions ascending inside ``out`` and ``values`` as
    many (a stamped table's rows, :func:`by_name`), else one ``setitem`` sweep (the rule)."""
    if type(rows) is range and rows.step > 0 and rows.start >= 0 \
            and len(values) == len(rows) and (not rows or rows[-1] < len(out)):
        out[rows.start:rows.stop:rows.step] = values
    else:
        deque(map(operator.setitem, repeat(out), rows, values), 0)


def holder_dicts(owners: Sequence[Any], names: Sequence[str],
                 swept: bytearray | None = None) -> list[Any]:
    """The dict of :func:`~derivgraph.paths.holder_dict` of each ``(owner, name)``, as a
    column (its key is always the row's name: no per-row pair is made; None where there is
    none or the owner is :data:`~derivgraph.paths.MISSING`), the owners of one name that are
    modules holding
    it in one registry read in one sweep each
    (:func:`~derivgraph.compiler.owners.registries_holding`), the rest one by one.
    ``swept``: one byte per row, set to 1 at the rows a registry sweep answered (their owner
    a module whose first registry holding the name, in :func:`~derivgraph.paths.step_into`'s
    order, is the answer's dict)."""
    out: list[Any] = [None] * len(names)
    reads = RegistryReads()  # the names of one stamped table share their owners' reads
    for name, rows in by_name(names).items():
        found = list(map(owners.__getitem__, rows))
        where = registries_holding(found, name, reads)
        if where is None:
            for i, owner in zip(rows, found):
                pair = holder_dict(owner, name) if owner is not MISSING else None
                out[i] = None if pair is None else pair[0]  # its key is ``name``
        else:
            put_rows(out, rows, where[1])
            if swept is not None:
                put_rows(swept, rows, b"\x01" * len(rows))
    return out


class PathReads(NamedTuple):
    """Many paths of one model read together (:func:`read_paths`): each path's owner path,
    last name and owner, :func:`holder_dicts` of those owners and names (each row's holder
    dict, None where it has none; the key in it is the row's name), and the object read
    at each path. Valid while nothing is written to the model (a later reader of the same
    paths takes ``where`` where it finds the very same owners:
    :meth:`~derivgraph.runtime.holders.Holders.bind`). ``ptrs``: each object's
    :func:`~derivgraph.addresses.address_of`, where the reader's caller recorded them (the
    compile's startup record; valid while nothing re-points them, as that record is);
    ``words``: the words they were computed from, where they were
    (:func:`~derivgraph.addresses.read_addresses`: a check of these objects at ``ptrs``
    is offered them, :meth:`~derivgraph.addresses.AtAddresses.offer`)."""

    paths: list[str]
    owner_paths: list[str]
    names: list[str]
    owners: list[Any]
    where: list[Any]
    objects: list[Any]
    ptrs: list[int] | None = None
    words: Addresses | None = None


def read_paths(reader: PathReader, paths: list[str]) -> tuple[list[Any], PathReads]:
    """``reader.get`` of each path, and what was read on the way (:class:`PathReads`).

    The owners are :meth:`PathReader.owners`; each row a registry sweep of
    :func:`holder_dicts` answered (a non-empty name: the owner a module, the name no dunder)
    reads its object from the dict that sweep found, the first of the module's ``_modules``,
    ``_parameters``, ``_buffers`` and ``__dict__`` holding the name, which is what
    :func:`~derivgraph.paths.step_into` returns; any other row is ``reader.get`` (the one
    rule)."""
    split = list(map(str.rpartition, paths, repeat(".")))
    owner_paths, names = list(map(_first, split)), list(map(_last, split))
    owners = reader.owners(owner_paths)
    swept = bytearray(len(paths))
    where = holder_dicts(owners, names, swept)
    if all(swept) and all(names):
        objects = list(map(operator.getitem, where, names))
    else:
        objects = [w[name] if s and name else reader.get(path)
                   for path, name, w, s in zip(paths, names, where, swept)]
    return objects, PathReads(paths, owner_paths, names, owners, where, objects)


#: a column of attribute-slot entries of a tensor kind (no derived scalar) the caller proved
#: held in their owners' ``__dict__`` only: its name, its entries and their owners, in row
#: order (:func:`holders_of`'s ``columns``); a fourth item, where given, is the entry column
#: whose rows they are (:class:`~derivgraph.runtime.entry.TableColumn`: its ids and storages
#: are its entries', row by row), which :meth:`HolderTable.__init__` reads instead of them
HeldColumn = (tuple[str, Sequence["Entry"], Sequence[Any]]
              | tuple[str, Sequence["Entry"], Sequence[Any], "TableColumn"])


def holders_of(owners: Mapping[str, Any], root: Any, entries: Sequence[Entry],
               columns: Iterable[HeldColumn] = (), found: Sequence[slice | None] | None = None,
               entry_paths: Sequence[str] | None = None) \
        -> tuple[list[dict[Any, Any]], list[str], bytearray]:
    """Every entry's holder dict and key (:func:`holder_of`) and whether a dict store binds it
    (:func:`_store_binds`), in ``entries``' order, read a column at a time: the entries of one
    name whose owners are modules holding it in one registry
    (:func:`~derivgraph.compiler.owners.registries_holding`) in one sweep each; any other
    entry (an owner missing or no module, a buffer, a tuple item, mixed slots; every entry
    where ``owners`` does not map the root path to ``root``) one by one, as before.

    ``columns``: runs of entries the caller proved to be held each in its owner's
    ``__dict__`` under the column's name and in no registry of that owner (an entry column
    just bound by one ``__dict__`` store each, nothing of its name written on its owners
    since): their answer is taken whole, without reading the registries or any row's name,
    where the column lies in ``entries`` at evenly spaced positions taken by no other column
    (:func:`column_rows`) and ``owners`` maps every row's owner path to the column's own
    owner (one identity sweep each); else its rows are read as any other.

    ``found``: one item per column, what :func:`column_rows` returned for it over a list of
    the same items as ``entries`` with at least the rows taken that are taken here (a column
    found there is found here at the same slice); a None item is looked for again. A column
    whose rows' owner paths and owners are, row by row, those of the last column taken (the
    columns of one stamped stack) is proven by those two sweeps instead of the walk's
    lookups, and takes that column's ``__dict__``s.

    ``entry_paths``: each of ``entries``' owner path, in its order, where the caller read them
    (the walk's: nothing written since); else each is read here."""
    n = len(entries)
    dicts: list[Any] = [None] * n
    keys: list[Any] = [None] * n
    # 1 where the row's holder is re-bound by one dict store (bytes: no reference per row
    # for the collector to walk; every row is set below)
    fast = bytearray(n)
    taken = bytearray(n)  # 1 at the rows a column answered
    if owners.get("") is root:
        # the last column taken: its rows' owner paths, its owners and their ``__dict__``s
        last: tuple[list[str], Sequence[Any], list[Any]] | None = None
        for j, (name, column_entries, column_owners, *_) in enumerate(columns):
            rows = found[j] if found is not None else None
            if rows is None:
                rows = column_rows(entries, column_entries, column_owners, taken)
            if rows is None:
                continue
            # the rows at ``rows`` of ``entries`` are the column's (column_rows' identity sweep)
            paths = list(map(_owner_path, column_entries)) if entry_paths is None \
                else entry_paths[rows]
            if last is not None and same_owners(paths, column_owners, last):
                held_dicts = last[2]  # the walk maps these paths to these owners: proven there
            elif all(map(_is, map(owners.get, paths, repeat(MISSING)), column_owners)):
                held_dicts = list(map(_DICT, column_owners))
            else:
                continue
            last = (paths, column_owners, held_dicts)
            m = len(column_entries)
            dicts[rows] = held_dicts
            keys[rows] = [name] * m
            fast[rows] = b"\x01" * m
            taken[rows] = b"\x01" * m
    rest = not_taken(taken)  # the rows no column answered (None: every row)
    group_of = entries if rest is None else list(map(entries.__getitem__, rest))
    names = list(map(_name, group_of))
    paths = list(map(_owner_path, group_of)) if entry_paths is None else \
        entry_paths if rest is None else list(map(entry_paths.__getitem__, rest))
    if rest is None:
        keys = names
    else:
        deque(map(operator.setitem, repeat(keys), rest, names), 0)
    for key, at in by_name(names).items():  # ``at``: positions in ``group_of``
        rows = at if rest is None else list(map(rest.__getitem__, at))
        where = None
        slots = set(map(_slot, map(group_of.__getitem__, at)))
        store = _STORE_REGISTRY.get(slots.pop()) if len(slots) == 1 else None
        if store is not None:  # an owner at the root path is read there (no module: refused)
            found = list(map(owners.get, map(paths.__getitem__, at), repeat(MISSING)))
            where = registries_holding(found, key) if owners.get("") is root else None
        if where is None:  # one by one (the reference)
            for i in rows:
                owner, dicts[i], keys[i] = holder_of(owners, root, entries[i])
                fast[i] = _store_binds(entries[i], owner, dicts[i])
            continue
        k, held = where
        put_rows(dicts, rows, held)
        put_rows(fast, rows, [k == store] * len(rows))
    return dicts, keys, fast


#: a column's rows' owner paths, its owners proven to be the objects at those paths, and their
#: ``__dict__`` s, in row order (what :func:`same_owners` compares the next column against)
ProvenOwners = tuple[list[str], Sequence[Any], list[Any]]


def same_owners(paths: list[str], owners: Sequence[Any], last: ProvenOwners) -> bool:
    """Whether a column's rows have ``last``'s owner paths (equal, row by row) and its owners
    are ``last``'s (identical, row by row): two C-level sweeps. The paths (``str``, each
    equal to itself) by one list comparison, which takes a row's very string as equal
    without comparing its characters (the columns of one table share their rows' path
    strings; where either is no list, a sweep of ``==``); the owners by identity (the very
    list, else one sweep)."""
    theirs = last[0]
    return len(paths) == len(theirs) and (
        paths == theirs if type(paths) is list and type(theirs) is list
        else all(map(operator.eq, paths, theirs))) \
        and (owners is last[1] or all(map(_is, owners, last[1])))


def column_rows(entries: Sequence[Entry], column: Sequence[Entry], owners: Sequence[Any],
                 taken: bytearray) -> slice | None:
    """Where ``column``'s rows (one owner each) lie in ``entries``: at ``start``,
    ``start + step``, ... (its first two rows found by identity), each one the column's row
    by one identity sweep and none ``taken``; None elsewhere."""
    m = len(column)
    if not m or m != len(owners) or not isinstance(entries, list):
        return None
    start = _index(entries, column[0])
    step = 1 if m == 1 or start < 0 else _index(entries, column[1], start + 1) - start
    if start < 0 or step <= 0:
        return None
    rows = slice(start, start + step * (m - 1) + 1, step)
    found = entries[rows]
    if len(found) != m or not all(map(_is, found, column)) or 1 in taken[rows]:
        return None
    return rows


def column_spans(columns: Sequence[HeldColumn], found: Sequence[slice | None],
                 entries: Sequence[Entry]) -> list[tuple[slice, TableColumn]]:
    """Each of ``columns``' entry column (its fourth item) with its rows' slice in
    ``entries`` (``found``: :func:`column_rows`' answer for it over ``entries``), where the
    column's entries are that column's very rows (the held column's list) and it holds an id
    and a storage per row (allocated); the other columns are left out."""
    out = []
    for column, rows in zip(columns, found):
        if rows is None or len(column) < 4:
            continue
        record = column[3]  # type: ignore[misc]
        m = len(column[1])
        if record.entries is column[1] and len(record.ids) == m == len(record.storages):
            out.append((rows, record))
    return out


def column_read(entries: Sequence[Entry], read: Callable[[Entry], Any],
                spans: Sequence[tuple[slice, Sequence[Any]]]) -> list[Any]:
    """``list(map(read, entries))``, where each ``(rows, values)`` of ``spans`` gives the
    answers at ``rows`` of ``entries`` (the caller's proof: ``values`` are those rows'
    ``read``, in order; the spans disjoint): one slice store per span, the rest read in one
    sweep."""
    if not spans:
        return list(map(read, entries))
    out: list[Any] = [None] * len(entries)
    taken = bytearray(len(entries))
    for rows, values in spans:
        out[rows] = values
        taken[rows] = b"\x01" * len(values)
    rest = not_taken(taken)
    if rest is not None:
        deque(map(operator.setitem, repeat(out), rest,
                  map(read, map(entries.__getitem__, rest))), 0)
    return out


def _index(entries: list[Entry], entry: Entry, start: int = 0) -> int:
    """The first position of ``entry`` in ``entries`` from ``start``, by identity (-1: none;
    one C-level sweep that stops there)."""
    return next(compress(count(start), map(_is, islice(entries, start, None), repeat(entry))),
                -1)


class HolderTable(_WatchedDicts):
    """The accessors of every tensor holder (derived scalars and tuple items excluded)."""

    __slots__ = ("entries", "id_list", "ids", "dicts", "keys", "storages", "ptrs", "fast",
                 "generation", "every", "watch", "watchable", "_all_fast", "_by_owner", "_at")

    def __init__(self, entries: Sequence[Entry],
                 where: Callable[[Entry], tuple[Any, dict[Any, Any], str]],
                 located: tuple[list[dict[Any, Any]], list[str], bytearray] | None = None,
                 spans: Sequence[tuple[slice, TableColumn]] = ()):
        """``where``: one entry's holder; ``located``: every entry's holder dict, key and
        dict-store flag, read beforehand (:func:`holders_of`), else ``where`` is asked.
        ``spans``: entry columns and the slice of ``entries`` that is their rows
        (:func:`column_spans`): their ids, storages and (where recorded) startup addresses
        are taken there, not read."""
        # (a HeldEntries: every entry of a HeldRows by position, made where read)
        self.entries = entries if type(entries) is HeldEntries else list(entries)
        ids = [(rows, column.ids) for rows, column in spans]
        self.id_list = column_read(self.entries, _id, ids)  # each holder's entry id, in order
        self.ids = frozenset(self.id_list)
        if located is None:
            located = ([], [], bytearray())
            for entry in self.entries:
                owner, d, key = where(entry)
                located[0].append(d)
                located[1].append(key)
                located[2].append(_store_binds(entry, owner, d))
        self.dicts: list[dict[Any, Any]] = located[0]
        self.keys: list[str] = located[1]
        # 1 (truthy) where a stale holder is re-bound by one dict store, else 0
        self.fast: bytearray = located[2]
        self.storages = column_read(self.entries, _storage,
                                    [(rows, column.storages) for rows, column in spans])
        self.every = range(len(self.entries))  # the indices of every holder
        self.ptrs = column_read(self.entries, _startup_ptr, [
            (rows, column.ptrs) for rows, column in spans
            if column.ptrs is not None and len(column.ptrs) == len(column.ids)])
        self.generation = 0  # bumped when a holder changes between a dict store and the slow path
        self.watch: ItemWatch | None = None  # built after a check proved every holder
        # False once watch_items refused the table (too few holders, no tags): the table's
        # size is fixed, so it would refuse again; settle then asks no more
        self.watchable = True
        self._all_fast = all(self.fast)
        self._by_owner: dict[str, list[int]] | None = None  # made by the first under()
        self._at: AtAddresses | None = None  # the storages at their startup addresses

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def all_fast(self) -> bool:
        """Every holder is re-bound by one dict store: ``all(fast)``, kept with :attr:`fast`
        (made with it, and again by :meth:`refresh` when one flipped)."""
        return self._all_fast

    def current(self) -> list[Any]:
        """What every holder holds now (None where the key is gone)."""
        return list(map(dict.get, self.dicts, self.keys))

    def intact(self, current: list[Any] | None = None) -> bool:
        """Every holder still holds the startup object (one C-level sweep; the version tags
        are not trusted here: this is the reference check)."""
        if current is None:  # no list: one C-level sweep that stops at the first change
            return all(map(_is, map(dict.get, self.dicts, self.keys), self.storages))
        return all(map(_is, current, self.storages))

    def at_startup_addresses(self) -> bool:
        """Every storage still at its startup address (:class:`AtAddresses`: one gather of
        storage words once proven, the same NumPy path the plan's other address checks of a
        reload take, else the addresses compared)."""
        return self.addresses().intact()

    def addresses(self) -> AtAddresses:
        """The check of :meth:`at_startup_addresses` (made once)."""
        at = self._at
        if at is None:
            at = self._at = AtAddresses(self.storages, self.ptrs)
        return at

    def startup_ptrs(self) -> list[int] | None:
        """Every holder's storage's startup address, where the words of :meth:`addresses`
        (taken once it passed) prove each storage still there
        (:meth:`~derivgraph.addresses.AtAddresses.proven`: one gather); None where not proven
        so (no check made yet included: nothing is compared here)."""
        at = self._at
        return at.ptrs if at is not None and at.proven() else None

    def stale(self, current: list[Any]) -> list[int]:
        """Indices of the holders that hold another object than the startup one."""
        return list(compress(range(len(current)), map(_not, map(_is, current, self.storages))))

    def changed(self) -> list[int]:
        """:meth:`stale` of what every holder holds now: one C-level sweep (:func:`changes`),
        or only the holders in the dicts whose version tag moved; empty when every holder
        holds the startup object (the watch is then settled: the caller re-binds the rest
        and settles after its stores)."""
        dicts, keys, storages = self.dicts, self.keys, self.storages
        if self.watch is None:
            stale = changes(map(_is, map(dict.get, dicts, keys), storages), len(dicts))
        else:
            stale = [i for i in self.watch.suspects() if dicts[i].get(keys[i]) is not storages[i]]
        if not stale and (self.watch is None or self.watch.moved):
            self.settle()
        return stale

    def values(self, indices: Sequence[int]) -> list[Any]:
        """What the holders at ``indices`` hold now (None where the key is gone)."""
        dicts, keys = self.dicts, self.keys
        return [dicts[i].get(keys[i]) for i in indices]

    def rebind(self, stale: Sequence[int], values: Sequence[Any], every: bool = False) \
            -> tuple[int, list[int]]:
        """Store the startup object back where the engine left a new one in the same registry.

        ``values``: what the holders at ``stale`` hold, in the same order. ``every``: the
        caller proved that every holder holds a new tensor (none gone). Returns (how many were
        stored, the indices left for the per-entry path: a holder gone from its registry or
        outside a dict).
        """
        dicts, keys, storages, fast = self.dicts, self.keys, self.storages, self.fast
        if len(stale) == len(storages) and self._all_fast \
                and (every or not any(map(_is, values, repeat(None)))):
            deque(map(operator.setitem, dicts, keys, storages), 0)  # every holder: one C sweep
            return len(stale), []
        done, rest = 0, []
        for i, value in zip(stale, values):
            if fast[i] and value is not None:
                dicts[i][keys[i]] = storages[i]
                done += 1
            else:
                rest.append(i)
        return done, rest

    def under(self, owners: Iterable[str]) -> list[int]:
        """Indices of the holders whose owner is at one of the paths ``owners``."""
        by_owner = self._by_owner
        if by_owner is None:
            by_owner = self._by_owner = {}
            for i, path in enumerate(map(_owner_path, self.entries)):
                by_owner.setdefault(path, []).append(i)
        return [i for path in owners for i in by_owner.get(path, ())]

    def refresh(self, indices: list[int],
                where: Callable[[Entry], tuple[Any, dict[Any, Any], str]]) -> bool:
        """Re-resolve the accessors of ``indices`` (owners rebuilt, or re-bound one by one);
        returns whether any holder changed between a dict store and the per-entry path."""
        flipped = False
        for i in indices:
            entry = self.entries[i]
            d = self.dicts[i]
            owner, self.dicts[i], self.keys[i] = where(entry)
            if self.dicts[i] is not d:
                self.watch = None  # another dict: watched afresh after the next full check
            fast = _store_binds(entry, owner, self.dicts[i])
            flipped |= fast != self.fast[i]
            self.fast[i] = fast
        if flipped:
            self.generation += 1
            self._all_fast = all(self.fast)
        return flipped
