"""Census snapshots of a model and the moved / undeclared diff between two of them.

A snapshot maps every path at which a tensor is reachable (aliases too) to a weak reference to
that tensor and its ``data_ptr``: it keeps nothing alive, and a tensor freed since the snapshot
reads as moved. Built on :func:`derivgraph.audit.runtime.census.take_census`.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.audit.runtime.census import take_census

__all__ = ["AuditResult", "Snapshot", "compare", "snapshot"]


def _ptr(t: torch.Tensor) -> int:
    return 0 if t.device.type == "meta" else t.data_ptr()


def _paths(model: Any) -> dict[str, torch.Tensor]:
    census = take_census(model, fingerprints=False, floats=False)
    out: dict[str, torch.Tensor] = {}
    for path, entry in census.tensors().items():
        for p in (path, *entry.aliases):
            out[p] = entry.value
    return out


@dataclass
class Snapshot:
    """Path -> (weak reference, data_ptr) of every reachable tensor."""

    slots: dict[str, tuple[weakref.ref, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.slots)


@dataclass
class AuditResult:
    """Paths whose tensor changed object or address, and new tensors nobody declared."""

    moved: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)
    tensors: int = 0

    def as_dict(self, limit: int | None = None) -> dict[str, Any]:
        return {"tensors": self.tensors, "moved": len(self.moved),
                "undeclared": len(self.undeclared), "moved_paths": self.moved[:limit],
                "undeclared_paths": self.undeclared[:limit]}


def snapshot(model: Any) -> Snapshot:
    """Record where every reachable tensor of ``model`` lives now."""
    return Snapshot({p: (weakref.ref(t), _ptr(t)) for p, t in _paths(model).items()})


def compare(before: Snapshot, model: Any, declared: Iterable[Any] = ()) -> AuditResult:
    """What moved since ``before``, and which new tensors are neither old nor ``declared``."""
    now = _paths(model)
    moved = []
    for path, (ref, ptr) in before.slots.items():
        current = now.get(path)
        if current is None or current is not ref() or _ptr(current) != ptr:
            moved.append(path)
    known = {id(t) for t in (ref() for ref, _ in before.slots.values()) if t is not None}
    known |= {id(t) for t in declared if isinstance(t, torch.Tensor)}
    undeclared = [p for p, t in now.items() if p not in before.slots and id(t) not in known]
    return AuditResult(sorted(moved), sorted(undeclared), len(now))
