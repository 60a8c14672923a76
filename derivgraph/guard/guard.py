"""Guard mode: keep every tensor a captured graph may read at its startup storage, no spec needed.

After the engine's first post-load step, :meth:`Guard.snapshot` records every tensor reachable
from the model (the runtime census walk: attributes, dicts/lists/tuples, ``functools.partial``
args, closure cells, nested objects) except the ones a plan declares. After every later
post-load step, :meth:`Guard.restore` walks again and, for each path:

* same tensor, same storage: nothing to do;
* rebound to a new tensor of the same shape, dtype, strides and device: the new value is copied
  into the startup storage and every holder of the new tensor is pointed back at the startup
  tensor (closure cells, partials and containers included; a holder that cannot be re-pointed,
  such as a tuple item, still gets the value copied and is reported);
* the startup tensor rebound in place to other storage (``.data =``): the value is copied back
  into the startup storage and the tensor is pointed at it again;
* changed shape/dtype/strides, disappeared, or a new tensor at a new path: reported as
  "graph recapture required"; ``strict`` raises :class:`RecaptureRequired` naming each one
  before anything is written.

Weights (registered parameters, persistent buffers, and anything sharing their storage) are
never written: a weight slot rebound to a bit-identical tensor is re-pointed; any other change
to one is reported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.compare import bits_equal
from derivgraph.errors import RecaptureRequired
from derivgraph.guard.holders import Held, Repoint, held_tensors, repoint
from derivgraph.guard.report import Change, GuardReport, SlotChange

__all__ = ["Guard"]

logger = logging.getLogger(__name__)


def _storage_ptr(t: torch.Tensor) -> int:
    if t.is_sparse or t.layout != torch.strided or t.device.type == "meta":
        return 0
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a wrapper subclass without storage
        return 0


def _layout(t: torch.Tensor) -> tuple[Any, ...]:
    return tuple(t.shape), tuple(t.stride()), t.dtype, t.device


def weight_storages(model: Any) -> set[int]:
    """Storage addresses of every registered parameter and persistent buffer."""
    ptrs: set[int] = set()
    if not isinstance(model, nn.Module):
        return ptrs
    for module in model.modules():
        tensors = [*module._parameters.values(),
                   *(b for n, b in module._buffers.items()
                     if n not in module._non_persistent_buffers_set)]
        ptrs |= {_storage_ptr(t) for t in tensors if t is not None}
    ptrs.discard(0)
    return ptrs


@dataclass
class _Startup:
    """A tensor as it was after the first post-load step."""

    tensor: torch.Tensor
    paths: list[str]
    data_ptr: int
    layout: tuple[Any, ...]
    weight: bool
    keep: torch.Tensor  # shares the startup storage and keeps it alive


@dataclass
class _Action:
    startup: _Startup
    new: torch.Tensor | None  # the engine's tensor (None: the startup tensor was rebound)
    holds: list[tuple[Any, str]] = field(default_factory=list)
    path: str = ""


class Guard:
    """Snapshot after the first post-load step; :meth:`restore` after each later one."""

    def __init__(self, *, max_depth: int = 12, max_objects: int = 500_000) -> None:
        self.max_depth, self.max_objects = max_depth, max_objects
        self.startup: dict[int, _Startup] = {}
        self.paths: dict[str, _Startup] = {}
        self.declared: set[int] = set()
        self.restores = 0
        self.seconds = 0.0

    def __len__(self) -> int:
        return len(self.startup)

    def _walk(self, model: Any) -> list[Held]:
        found, truncated = held_tensors(model, max_depth=self.max_depth,
                                        max_objects=self.max_objects)
        if truncated:
            logger.warning("guard: the walk stopped at %d objects; tensors past it are not "
                           "guarded (raise max_objects)", self.max_objects)
        return found

    def snapshot(self, model: Any, declared: Iterable[Any] = ()) -> GuardReport:
        """Record every reachable tensor but the ``declared`` ones (a plan keeps those)."""
        start = time.perf_counter()
        self.declared = {id(t) for t in declared if isinstance(t, torch.Tensor)}
        weights = weight_storages(model)
        self.startup, self.paths = {}, {}
        for held in self._walk(model):
            t = held.tensor
            if id(t) in self.declared or t.is_sparse or t.layout != torch.strided:
                continue
            ptr = _storage_ptr(t)
            entry = _Startup(t, list(held.paths), t.data_ptr() if ptr else 0, _layout(t),
                             ptr in weights, t.detach())
            self.startup[id(t)] = entry
            for p in held.paths:
                self.paths[p] = entry
        self.seconds = time.perf_counter() - start
        report = GuardReport(guarded=self.guarded(), weights=len(self.startup) - len(
            self.guarded()), seconds=self.seconds)
        logger.info("guard: %d tensor(s) guarded, %d weight(s) watched", len(report.guarded),
                    report.weights)
        return report

    def guarded(self) -> list[str]:
        """Canonical paths of the guarded (non-weight, undeclared) tensors."""
        return sorted(s.paths[0] for s in self.startup.values() if not s.weight)

    def restore(self, model: Any, *, strict: bool = False,
                declared: Iterable[Any] = ()) -> GuardReport:
        """Bring every rebound slot back to its startup storage (see the module docstring).

        ``declared``: tensors a plan keeps now (never reported as new). ``strict``: raise
        :class:`RecaptureRequired` naming every slot that needs a recapture, before any write.
        """
        start = time.perf_counter()
        declared_now = self.declared | {id(t) for t in declared if isinstance(t, torch.Tensor)}
        report = GuardReport(guarded=self.guarded(), weights=len(self.startup) - len(
            self.guarded()))
        actions = self._plan(model, declared_now, report)
        if strict and report.recapture:
            raise RecaptureRequired([c.describe() for c in report.recapture])
        with torch.no_grad():
            for action in actions:
                self._apply(action, report)
        self.restores += 1
        report.seconds = time.perf_counter() - start
        if report.recapture:
            logger.warning("guard: %d slot(s) need a graph recapture: %s", len(report.recapture),
                           "; ".join(c.describe() for c in report.recapture[:8]))
        return report

    # ---- deciding ------------------------------------------------------------------------------

    def _plan(self, model: Any, declared: set[int], report: GuardReport) -> list[_Action]:
        found = self._walk(model)
        now: dict[str, Held] = {p: h for h in found for p in h.paths}
        actions: dict[tuple[int, int], _Action] = {}
        for path, entry in self.paths.items():
            held = now.get(path)
            if held is None:
                report.recapture.append(SlotChange(path, Change.DISAPPEARED))
                continue
            t = held.tensor
            if t is entry.tensor:
                if entry.data_ptr and t.data_ptr() != entry.data_ptr and (
                        (id(t), 0) not in actions):
                    self._decide(entry, None, held, path, actions, report)
                continue
            if id(t) in declared or id(t) in self.startup:
                continue  # another startup tensor, or one a plan keeps: moved between slots
            if (id(t), id(entry.tensor)) not in actions:
                self._decide(entry, t, held, path, actions, report)
        for held in found:
            t = held.tensor
            if id(t) in self.startup or id(t) in declared or any(p in self.paths
                                                                  for p in held.paths):
                continue
            report.recapture.append(SlotChange(held.paths[0], Change.NEW, _describe(t)))
        return list(actions.values())

    def _decide(self, entry: _Startup, t: torch.Tensor | None, held: Held, path: str,
                actions: dict[tuple[int, int], _Action], report: GuardReport) -> None:
        value = entry.tensor if t is None else t
        if _layout(value) != entry.layout:
            was = _describe_layout(entry.layout)
            report.recapture.append(SlotChange(path, Change.LAYOUT,
                                               f"{was} -> {_describe(value)}"))
            return
        if entry.weight:
            if t is None or not bits_equal(t, entry.keep):
                report.recapture.append(SlotChange(path, Change.WEIGHT))
                return
        if t is not None:
            other = next((a for (new, _), a in actions.items()
                          if new == id(t) and a.startup is not entry), None)
            if other is not None:  # one new tensor now stands where two startup tensors stood
                report.recapture.append(SlotChange(path, Change.CONFLICT, other.path))
                return
        key = (id(value), id(entry.tensor)) if t is not None else (id(value), 0)
        actions[key] = _Action(entry, t, list(held.holds), path)

    # ---- writing -------------------------------------------------------------------------------

    def _apply(self, action: _Action, report: GuardReport) -> None:
        entry, new = action.startup, action.new
        if new is None:  # the startup tensor itself was pointed at other storage
            entry.keep.copy_(entry.tensor.detach())
            entry.tensor.data = entry.keep
            report.restored.append(SlotChange(action.path, Change.STORAGE))
            return
        if not entry.weight:
            entry.keep.copy_(new)
        fixed = [piece for holder, piece in action.holds
                 if repoint(holder, piece, entry.tensor) is Repoint.FIXED]
        if fixed:
            report.copied_only.append(SlotChange(action.path, Change.FIXED_HOLDER,
                                                 ", ".join(fixed)))
        else:
            report.restored.append(SlotChange(action.path, Change.WEIGHT_REPOINTED
                                              if entry.weight else Change.REBOUND))


def _describe_layout(layout: tuple[Any, ...]) -> str:
    shape, stride, dtype, device = layout
    return f"{str(dtype).removeprefix('torch.')}{list(shape)} stride {list(stride)} {device}"


def _describe(t: torch.Tensor) -> str:
    return _describe_layout(_layout(t))
