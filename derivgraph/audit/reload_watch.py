"""What a strict reload check compares: one cheap record before a reload, one check after.

:func:`watch` walks the model once (no full hashing) and keeps, without holding any tensor
alive: every path's tensor (weak reference and address), a sampled digest of every loaded
tensor (parameters, persistent buffers), a full value digest of every other tensor, and every
Python float. :meth:`ReloadWatch.check` walks again after the reload and reports

* ``moved`` — a path whose tensor is another object or at another address;
* ``undeclared`` — a tensor that appeared and that nothing declares;
* ``unrefreshed`` — stale in place (see :mod:`derivgraph.audit.freshness` for the rule and
  what it cannot see);
* ``scalars`` — Python floats whose value changed (a captured graph baked the old number).

This is what vLLM's strict mode runs (``vllm_integration.oracle``).
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

from .census import Census, take_census
from .fingerprint import fingerprints
from .freshness import (
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


def _census(model: Any) -> Census:
    return take_census(model, fingerprints=False, floats=True)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


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
        start = time.perf_counter()
        census = _census(model)
        now: dict[str, torch.Tensor] = {}
        for entry in census.tensors().values():
            for p in entry.paths():
                now[p] = entry.value
        result = WatchResult(tensors=len(now))
        for path, (ref, ptr) in self.slots.items():
            current = now.get(path)
            if current is None or current is not ref() or _ptr(current) != ptr:
                result.moved.append(path)
        known = {id(t) for t in (ref() for ref, _ in self.slots.values()) if t is not None}
        known |= {id(t) for t in declared if isinstance(t, torch.Tensor)}
        result.undeclared = sorted(p for p, t in now.items()
                                   if p not in self.slots and id(t) not in known)
        result.moved.sort()
        loaded_now = loaded_tensors(model)
        changes = module_changes(self.loaded, sampled_digests(loaded_now))
        moved = set(result.moved)
        still = {}
        for path, before in self.digests.items():
            entry = census.entries.get(path)
            if entry is not None and entry.is_tensor and path not in moved and before is not None:
                still[path] = entry.value
        now_digests = fingerprints(still)
        unchanged = [(p, t) for p, t in still.items() if now_digests[p] == self.digests[p]]
        with torch.no_grad():
            modules = [n for n, _ in model.named_modules()] if isinstance(model, nn.Module) \
                else []
            result.unrefreshed = list(unrefreshed(unchanged, modules, changes))
        for path, entry in census.scalars().items():
            old = self.scalars.get(path)
            if old is not None and isinstance(entry.value, float) and not _same(old, entry.value):
                result.scalars.append(ScalarChange(path, old, entry.value))
        result.seconds = time.perf_counter() - start
        return result


def watch(model: Any) -> ReloadWatch:
    """Record ``model`` before a reload (see the module docstring); keeps no tensor alive."""
    census = _census(model)
    loaded = loaded_tensors(model)
    loaded_ids = {id(t) for t in loaded.values()}
    slots: dict[str, tuple[weakref.ref, int]] = {}
    others: dict[str, torch.Tensor] = {}
    for path, entry in census.tensors().items():
        t = entry.value
        for p in entry.paths():
            slots[p] = (weakref.ref(t), _ptr(t))
        if id(t) not in loaded_ids:
            others[path] = t
    scalars = {p: e.value for p, e in census.scalars().items() if isinstance(e.value, float)}
    return ReloadWatch(slots, sampled_digests(loaded), fingerprints(others), scalars)
