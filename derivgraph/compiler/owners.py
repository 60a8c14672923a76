"""Many dotted paths of one model read at once: each owner on the way walked once.

:func:`~derivgraph.paths.get_path` walks a path from the root on every call; a compile phase
reads every source and derived path (tens of thousands under a few owners each), so
:class:`PathReader` walks each owner path once and takes the last hop from there. A path is
the fold of its parts, so ``get(path)`` is ``get_path(root, path)`` while nothing on the way
changes: a reader lives for one phase that writes nothing to the model.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

from torch import nn

from derivgraph.paths import MISSING, MODULE_REGISTRIES, get_path, step_into

__all__ = ["PathReader", "RegistryReads", "child", "one_hop", "path_prefixes",
           "registries_holding"]

_DICT = operator.attrgetter("__dict__")


def one_hop(name: str) -> bool:
    """Whether :func:`child` reads ``name`` as one :func:`~derivgraph.paths.step_into` hop
    (no dot, no dunder)."""
    return bool(name) and "." not in name and not (name.startswith("__") and name.endswith("__"))


def child(owner: Any, name: str) -> Any:
    """``get_path(owner, name)`` for a name read from ``owner`` (one hop when it holds no dot
    and is no dunder, without splitting it)."""
    if one_hop(name):
        return step_into(owner, name)
    return get_path(owner, name)


class PathReader:
    """``get_path(root, path)`` for many paths: each owner (the path up to its last dot) is
    read once, one hop from its own owner."""

    def __init__(self, root: Any):
        self.root = root
        self._owners: dict[str, Any] = {"": root}

    def owner(self, owner_path: str) -> Any:
        """The object at ``owner_path`` (walked once), or :data:`MISSING`."""
        owners = self._owners
        found = owners.get(owner_path, owners)
        if found is owners:
            found = owners[owner_path] = self.get(owner_path)
        return found

    def owners(self, owner_paths: list[str]) -> list[Any]:
        """:meth:`owner` of every path: one C-level sweep of the owners already walked, each
        other one walked (once)."""
        cache = self._owners
        found = list(map(cache.get, owner_paths, repeat(cache)))
        if any(map(operator.is_, found, repeat(cache))):
            submodules = self._submodules(owner_paths) \
                if all(map(operator.is_, found, repeat(cache))) else None
            if submodules is not None:
                return submodules
            found = [self.owner(p) if f is cache else f for f, p in zip(found, owner_paths)]
        return found

    def _submodules(self, paths: list[str]) -> list[Any] | None:
        """:meth:`owner` of every path, none walked yet, where all are one hop from one
        ``nn.Module`` parent whose ``_modules`` holds every last name (what
        :func:`~derivgraph.paths.step_into` reads first; no name is empty or a dunder, so
        :func:`child` reads each as that one hop): read in C-level sweeps, kept as walked;
        else None (walked one by one)."""
        head, dot, _ = paths[0].rpartition(".")  # the one parent's path, if they have one
        if not all(map(str.startswith, paths, repeat(head + dot))):
            return None
        names = list(map(operator.getitem, paths, repeat(slice(len(head) + len(dot), None))))
        if not all(names) or any(map(operator.contains, names, repeat("."))) \
                or any(map(str.startswith, names, repeat("__"))):
            return None
        parent = self.owner(head)
        if not isinstance(parent, nn.Module):
            return None
        registry = parent.__dict__["_modules"]
        found = list(map(registry.get, names, repeat(registry)))  # the dict: not held there
        if any(map(operator.is_, found, repeat(registry))):
            return None
        self._owners.update(zip(paths, found))
        return found

    def get(self, path: str) -> Any:
        """The object at ``path``, or :data:`MISSING` (as :func:`get_path`): one hop from its
        owner."""
        owner_path, _, name = path.rpartition(".")
        owner = self.owner(owner_path)
        if owner is MISSING:
            return MISSING
        return child(owner, name)

    def untouched_by(self, names: Iterable[str]) -> bool:
        """Whether no owner path read so far has a hop named by one of ``names``, so that a
        store of those names on any object left every object read where it was (every
        prefix of a read path is read too: one C-level sweep of the paths' ends). A reader
        kept across such stores is exact only where this holds."""
        names = set(names)
        if not names:
            return True
        read = self._owners
        if not read.keys().isdisjoint(names):  # a hop from the root
            return False
        ends = tuple(f".{name}" for name in names)
        return not any(map(str.endswith, read, repeat(ends)))

    def chain(self, path: str) -> list[Any]:
        """The root and every object on ``path`` (the last included), up to the first that is
        missing or None."""
        out = [self.root]
        if path:
            parts = path.split(".")
            for i in range(1, len(parts) + 1):
                obj = self.owner(".".join(parts[:i]))
                if obj is MISSING or obj is None:
                    break
                out.append(obj)
        return out


class RegistryReads:
    """What :func:`registries_holding` reads of a list of owners whatever the key: whether
    every one is an ``nn.Module``, their ``__dict__`` s and (each when first needed, in
    :data:`~derivgraph.paths.MODULE_REGISTRIES` order) their registries; kept for the next
    key asked over the very same owners (one identity sweep), read again for others. Only
    while nothing writes to the owners (the reads are kept)."""

    __slots__ = ("owners", "modules", "dicts", "registries")

    def __init__(self) -> None:
        self.owners: Sequence[Any] | None = None
        self.modules = False
        self.dicts: list[Any] = []
        self.registries: list[list[Any]] = []

    def take(self, owners: Sequence[Any]) -> None:
        """Keep the reads where ``owners`` are the last ones row by row; else start over."""
        last = self.owners
        if last is not None and len(last) == len(owners) and all(map(operator.is_, owners, last)):
            return
        self.owners = owners
        self.modules = all(issubclass(cls, nn.Module) for cls in set(map(type, owners)))
        self.dicts = list(map(_DICT, owners)) if self.modules else []
        self.registries = []

    def registry(self, k: int) -> list[Any]:
        """Registry ``k`` of every owner (read the first time it is asked)."""
        while len(self.registries) <= k:
            self.registries.append(list(map(MODULE_REGISTRIES[len(self.registries)],
                                            self.dicts)))
        return self.registries[k]


def registries_holding(owners: Sequence[Any], key: str, reads: RegistryReads | None = None,
                       ) -> tuple[int, list[dict[str, Any]]] | None:
    """``(k, dicts)``: where every owner holds ``key``, read a column at a time.

    ``dicts[i]`` is the dict ``owners[i]`` holds ``key`` in, as
    :func:`~derivgraph.paths.step_into` and :func:`~derivgraph.paths.holder_dict` read a
    module: the first of its ``_modules`` (``k`` 0), ``_parameters`` (1), ``_buffers`` (2)
    and ``__dict__`` (3) that holds it. Kept only where every owner is an ``nn.Module`` and
    holds ``key`` in the same one of them (one C-level sweep per registry); None otherwise
    (an owner that is no module, a dunder key, a key held nowhere or in different places):
    the caller reads those owners one by one. ``reads``: the owners' reads kept from the last
    key asked with it (:class:`RegistryReads`), else read here.
    """
    if not owners or (key.startswith("__") and key.endswith("__")):
        return None
    if reads is None:
        reads = RegistryReads()
    reads.take(owners)
    if not reads.modules:
        return None
    for k in range(len(MODULE_REGISTRIES)):  # each test stops at its first answer
        found = reads.registry(k)
        if all(map(operator.contains, found, repeat(key))):
            return k, found
        if any(map(operator.contains, found, repeat(key))):
            return None
    dicts = reads.dicts
    return (len(MODULE_REGISTRIES), dicts) if all(map(operator.contains, dicts, repeat(key))) \
        else None


def path_prefixes(paths: Iterable[str]) -> frozenset[str]:
    """Every prefix ``".".join(parts[:i + 1])`` of every path's dot-separated parts (the
    path included), one set a level up: each parent taken once."""
    out: set[str] = set()
    level = set(paths) - {""}
    while level:
        out |= level
        level = {parent for parent, dot, _ in map(str.rpartition, level, repeat(".")) if dot} \
            - out
    return frozenset(out)
