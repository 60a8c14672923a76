"""The census walk: breadth first over everything reachable from a model, each object once,
with its canonical path and its alias paths (see :mod:`.census` for the rules)."""

from __future__ import annotations

import gc
import logging
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.fingerprint import Digests
from derivgraph.audit.runtime.objects import (
    Leaf,
    attributes,
    join_path,
    leaf_kind,
    registered_children,
)
from derivgraph.audit.runtime.records import Census, CensusEntry, TensorIdentity

__all__ = ["Walker", "gc_paused"]

logger = logging.getLogger(__name__)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a walk allocates tens of thousands of short-lived
    objects, and each full collection it would trigger traverses the whole heap (a loaded
    engine's is large). Nothing a walk allocates needs it; it resumes, if it was on, after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class _Node:
    path: str
    parent: int  # id of the tree parent, 0 for the root
    depth: int
    extra: list[tuple[int, str]] = field(default_factory=list)  # alias edges (parent id, piece)


class Walker:
    """The walk itself; what a reached tensor or scalar becomes is :meth:`record_tensor` /
    :meth:`record_scalar` (a :class:`Census` entry here, a bare path list in
    :class:`_ReachWalker`)."""

    def __init__(self, census: Census, *, max_depth: int, max_objects: int, fingerprints: bool,
                 floats: bool, ints: bool, keep_values: bool, max_aliases: int):
        self.census = census
        self.max_depth, self.max_objects = max_depth, max_objects
        self.fingerprints, self.floats, self.ints = fingerprints, floats, ints
        self.keep_values, self.max_aliases = keep_values, max_aliases
        self.nodes: dict[int, _Node] = {}
        self.objs: dict[int, Any] = {}  # keeps walked objects alive: ids stay unique
        self.tensor_entries: dict[int, CensusEntry] = {}
        self.queue: deque[tuple[int, Any]] = deque()
        self.digests = Digests()
        self.aliased: dict[int, bool] = {}

    def _is_ancestor(self, maybe: int, of: int) -> bool:
        node_id = of
        while node_id:
            if node_id == maybe:
                return True
            node_id = self.nodes[node_id].parent
        return False

    def record_tensor(self, cid: int, path: str, t: torch.Tensor, kind: str,
                      holder: Any) -> None:
        entry_kind = kind if kind in ("parameter", "buffer") else "attribute"
        entry = CensusEntry(path, entry_kind, TensorIdentity.of(t), None,
                            t if self.keep_values else None, place=kind,
                            holder=type(holder).__name__)
        if self.fingerprints:  # device digests synchronize once, at the end
            self.digests.add(entry, t)
        self.tensor_entries[cid] = entry
        self.census.entries[path] = entry

    def record_scalar(self, path: str, value: float | int, kind: str, holder: Any) -> None:
        if path not in self.census.entries:
            self.census.entries[path] = CensusEntry(path, "scalar", None, value, value,
                                                    place=kind, holder=type(holder).__name__)

    def _discover(self, parent: int, piece: str, child: Any, kind: str, holder: Any,
                  depth: int) -> None:
        cid = id(child)
        known = self.nodes.get(cid)
        if known is not None:
            if not self._is_ancestor(cid, parent):
                known.extra.append((parent, piece))
            return
        leaf = leaf_kind(child)
        if leaf is Leaf.ATOM:
            return
        path = join_path(self.nodes[parent].path if parent else "", piece)
        if leaf is Leaf.TENSOR:
            self.nodes[cid] = _Node(path, parent, depth)
            self.objs[cid] = child
            self.record_tensor(cid, path, child, kind, holder)
            if child.__dict__ or (type(child) not in (torch.Tensor, nn.Parameter)
                                  and hasattr(child, "__tensor_flatten__")):
                self._enqueue(cid, child, depth)
            return
        if leaf is Leaf.FLOAT:
            if self.floats:
                self.record_scalar(path, child, kind, holder)
            return
        if leaf is Leaf.INT:
            if self.ints:
                self.record_scalar(path, child, kind, holder)
            return
        self.nodes[cid] = _Node(path, parent, depth)
        self.objs[cid] = child
        self._enqueue(cid, child, depth)

    def _enqueue(self, cid: int, obj: Any, depth: int) -> None:
        if depth >= self.max_depth:
            self.census.depth_limited += 1
            return
        self.queue.append((cid, obj))

    def walk(self, model: Any) -> None:
        root = id(model)
        self.nodes[root] = _Node("", 0, 0)
        self.objs[root] = model
        modules: list[tuple[int, Any]] = [(root, model)]
        if isinstance(model, nn.Module):  # pass 1: the registered tree, breadth first
            i = 0
            while i < len(modules):
                mid, module = modules[i]
                i += 1
                for piece, child, kind in registered_children(module):
                    if kind == "module":
                        if id(child) not in self.nodes:
                            self.nodes[id(child)] = _Node(join_path(self.nodes[mid].path, piece),
                                                          mid, 0)
                            self.objs[id(child)] = child
                            modules.append((id(child), child))
                        elif not self._is_ancestor(id(child), mid):
                            self.nodes[id(child)].extra.append((mid, piece))
                    else:
                        self._discover(mid, piece, child, kind, module, 0)
        tree = {mid for mid, _ in modules}
        self.queue.extend(modules)  # pass 2: everything else, breadth first from every module
        while self.queue:
            oid, obj = self.queue.popleft()
            self.census.objects += 1
            if self.census.objects > self.max_objects:
                self.census.truncated = True
                logger.warning("census stopped after %d objects (max_objects); raise it to see "
                               "everything", self.max_objects)
                break
            depth = self.nodes[oid].depth
            children = registered_children(obj) if (isinstance(obj, nn.Module)
                                            and oid not in tree) else ()
            for piece, child, kind in (*children, *attributes(obj)):
                self._discover(oid, piece, child, kind, obj, depth + 1)

    def paths_of(self, cid: int, memo: dict[int, list[str]], active: set[int]) -> list[str]:
        """Canonical path then alias paths of an object, at most ``max_aliases + 1``."""
        if cid in memo:
            return memo[cid]
        node = self.nodes[cid]
        if not self._aliased(cid):
            memo[cid] = [node.path]
            return memo[cid]
        out = [node.path]
        chain = cid
        parents = []
        while chain:  # aliases of any tree ancestor are aliases of this object too
            parents.append(chain)
            chain = self.nodes[chain].parent
        active.add(cid)
        for anc in parents:
            anc_node = self.nodes[anc]
            if not anc_node.extra:
                continue
            suffix = node.path[len(anc_node.path):] if anc != cid else ""
            for parent, piece in anc_node.extra:
                if parent in active or len(out) > self.max_aliases:
                    continue
                for p in self.paths_of(parent, memo, active):
                    alias = join_path(p, piece) + suffix
                    if alias not in out:
                        out.append(alias)
                    if len(out) > self.max_aliases:
                        break
        active.discard(cid)
        memo[cid] = out
        return out

    def _aliased(self, cid: int) -> bool:
        """Whether the object or any tree ancestor has an alias edge (memoized)."""
        known = self.aliased.get(cid)
        if known is None:
            node = self.nodes[cid]
            known = bool(node.extra) or (node.parent != 0 and self._aliased(node.parent))
            self.aliased[cid] = known
        return known

    def finish(self) -> None:
        self.digests.finish()
        memo: dict[int, list[str]] = {}
        for cid, entry in self.tensor_entries.items():
            entry.aliases = self.paths_of(cid, memo, set())[1:]
