"""What a strict reload check compares: one cheap record before a reload, one check after.

:func:`watch` walks the model once (no full hashing) and keeps, without holding any tensor
alive: every path's tensor (weak reference and address), a sampled digest of every loaded
tensor (parameters, persistent buffers), a full value digest of every other tensor, and every
Python float. :meth:`ReloadWatch.check` walks again after the reload and reports

* ``moved`` — a path whose tensor is another object or at another address;
* ``undeclared`` — a tensor that appeared and that nothing declares;
* ``unrefreshed`` — stale in place (see :mod:`derivgraph.audit.runtime.freshness` for the rule and
  what it cannot see);
* ``scalars`` — Python floats whose value changed (a captured graph baked the old number).

This is what vLLM's strict mode runs (``vllm_integration.session``).
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.census import Reach, gc_paused, reach
from derivgraph.audit.runtime.fingerprint import fingerprints
from derivgraph.audit.runtime.freshness import (
    Unrefreshed,
    loaded_tensors,
    module_changes,
    sampled_digests,
    unrefreshed,
)

__all__ = ["ReloadWatch", "ScalarChange", "WatchResult", "watch"]


def _ptr(t: torch.Tensor) -> int:
    return 0 if t.device.type == "meta" else t.data_ptr()


@dataclass(frozen=True)
class ScalarChange:
    """A Python float that a reload changed."""

    path: str
    before: float
    after: float


@dataclass
class WatchResult:
    """What one reload broke (see the module docstring)."""

    moved: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)
    unrefreshed: list[Unrefreshed] = field(default_factory=list)
    scalars: list[ScalarChange] = field(default_factory=list)
    tensors: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"tensors": self.tensors, "moved": list(self.moved),
                "undeclared": list(self.undeclared),
                "unrefreshed": [{"path": u.path, "module": u.module, "reason": u.reason()}
                                for u in self.unrefreshed],
                "scalars_changed": [{"path": s.path, "before": s.before, "after": s.after}
                                    for s in self.scalars]}


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _paths(found: Reach) -> dict[str, torch.Tensor]:
    """Every path (aliases too) -> its tensor."""
    return {p: t for t, paths in found.tensors for p in paths}


@dataclass
class ReloadWatch:
    """The record taken before a reload (see :func:`watch`)."""

    slots: dict[str, tuple[weakref.ref, int]]
    loaded: dict[str, str | None]
    digests: dict[str, str | None]  # canonical path -> full digest, non-loaded tensors only
    scalars: dict[str, float]

    def __len__(self) -> int:
        return len(self.slots)

    def check(self, model: Any, declared: Iterable[Any] = ()) -> WatchResult:
        """Walk ``model`` again and compare (reads only)."""
        with gc_paused():
            return self._check(model, declared)

    def _check(self, model: Any, declared: Iterable[Any]) -> WatchResult:
        start = time.perf_counter()
        found = reach(model)
        now = _paths(found)
        result = WatchResult(tensors=len(now))
        ptrs: dict[int, int] = {}
        for path, (ref, ptr) in self.slots.items():
            current = now.get(path)
            if current is None or current is not ref():
                result.moved.append(path)
                continue
            key = id(current)
            if key not in ptrs:
                ptrs[key] = _ptr(current)
            if ptrs[key] != ptr:
                result.moved.append(path)
        known = {id(t) for t in (ref() for ref, _ in self.slots.values()) if t is not None}
        known |= {id(t) for t in declared if isinstance(t, torch.Tensor)}
        result.undeclared = sorted(p for p, t in now.items()
                                   if p not in self.slots and id(t) not in known)
        result.moved.sort()
        changes = module_changes(self.loaded, sampled_digests(loaded_tensors(model)))
        moved = set(result.moved)
        canonical = {paths[0]: t for t, paths in found.tensors}
        still = {path: canonical[path] for path, before in self.digests.items()
                 if before is not None and path in canonical and path not in moved}
        now_digests = fingerprints(still)
        unchanged = [(p, t) for p, t in still.items() if now_digests[p] == self.digests[p]]
        with torch.no_grad():
            modules = [n for n, _ in model.named_modules()] if isinstance(model, nn.Module) \
                else []
            result.unrefreshed = sorted(unrefreshed(unchanged, modules, changes),
                                        key=lambda u: u.path)
        for path, value in found.floats.items():
            old = self.scalars.get(path)
            if old is not None and not _same(old, value):
                result.scalars.append(ScalarChange(path, old, value))
        result.scalars.sort(key=lambda c: c.path)
        result.seconds = time.perf_counter() - start
        return result


def watch(model: Any) -> ReloadWatch:
    """Record ``model`` before a reload (see the module docstring); keeps no tensor alive."""
    with gc_paused():
        return _watch(model)


def _watch(model: Any) -> ReloadWatch:
    found = reach(model)
    loaded = loaded_tensors(model)
    loaded_ids = {id(t) for t in loaded.values()}
    slots: dict[str, tuple[weakref.ref, int]] = {}
    others: dict[str, torch.Tensor] = {}
    for t, paths in found.tensors:
        slot = (weakref.ref(t), _ptr(t))
        for p in paths:
            slots[p] = slot
        if id(t) not in loaded_ids:
            others[paths[0]] = t
    return ReloadWatch(slots, sampled_digests(loaded), fingerprints(others), dict(found.floats))
