"""Guard mode: keep every tensor a captured graph may read at its startup storage, no spec needed.

After the engine's first post-load step, :meth:`Guard.snapshot` records every tensor reachable
from the model (the runtime census walk: attributes, dicts/lists/tuples, ``functools.partial``
args, closure cells, nested objects) except the ones a plan declares, with the chain of path
pieces to each place holding it. After every later post-load step, :meth:`Guard.restore` finds
each place again by following its chain (no walk: objects shared by several chains are looked
up once), walks only the objects the engine rebuilt (to find tensors that are new), and:

* same tensor, same storage: nothing to do;
* rebound to a new tensor of the same shape, dtype, strides and device: the new value is copied
  into the startup storage and every holder of the new tensor is pointed back at the startup
  tensor (closure cells, partials and containers included; a holder that cannot be re-pointed,
  such as a tuple item, still gets the value copied and is reported);
* the startup tensor rebound in place to other storage (``.data =``): the value is copied back
  into the startup storage and the tensor is pointed at it again;
* changed shape/dtype/strides, disappeared, or a new tensor in a rebuilt object: reported as
  "graph recapture required"; ``strict`` raises :class:`RecaptureRequired` naming each one
  before anything is written.

Weights (registered parameters, persistent buffers, and anything sharing their storage) are
never written: a weight slot rebound to a bit-identical tensor is re-pointed; any other change
to one is reported. ``restore(full=True)`` walks the whole model instead of the rebuilt objects
only, so a new tensor attached to an object the engine kept is reported too.
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
from derivgraph.guard.holders import (
    MISSING,
    Held,
    Repoint,
    held_tensors,
    lookup,
    path_of,
    repoint,
)
from derivgraph.guard.report import Change, GuardReport, SlotChange
from derivgraph.guard.slots import SlotTable

__all__ = ["Guard", "weight_storages"]

logger = logging.getLogger(__name__)

Chain = tuple[str, ...]


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
    """A tensor as it was after the first post-load step, and the chains to its holders."""

    tensor: torch.Tensor
    paths: list[str]
    chains: list[tuple[Chain, str]]  # (chain, the path it spells), one per holder
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


class _Resolver:
    """Follows chains from the root, looking each shared prefix up once."""

    def __init__(self, model: Any) -> None:
        self.memo: dict[Chain, Any] = {(): model}

    def __call__(self, chain: Chain) -> Any:
        memo = self.memo
        if chain in memo:
            return memo[chain]
        parent = self(chain[:-1])
        value = MISSING if parent is MISSING else lookup(parent, chain[-1])
        memo[chain] = value
        return value


class Guard:
    """Snapshot after the first post-load step; :meth:`restore` after each later one."""

    def __init__(self, *, max_depth: int = 12, max_objects: int = 500_000) -> None:
        self.max_depth, self.max_objects = max_depth, max_objects
        self.startup: dict[int, _Startup] = {}
        self.paths: dict[str, _Startup] = {}
        self.objects: dict[Chain, Any] = {}  # every holder on a chain, as at the snapshot
        self.declared: set[int] = set()
        self.restores = 0
        self.seconds = 0.0
        self._claimed: dict[int, _Action] = {}  # new tensor id -> its action (one restore)
        self._guarded: list[str] | None = None
        self._slots: SlotTable | None = None  # the chains as accessors, made at first restore

    def __len__(self) -> int:
        return len(self.startup)

    def _walk(self, root: Any) -> list[Held]:
        found, truncated = held_tensors(root, max_depth=self.max_depth,
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
        self.startup, self.paths, self.objects, self._guarded = {}, {}, {}, None
        self._slots = None
        resolve = _Resolver(model)
        for held in self._walk(model):
            t = held.tensor
            if id(t) in self.declared or t.is_sparse or t.layout != torch.strided:
                continue
            ptr = _storage_ptr(t)
            entry = _Startup(t, list(held.paths), [(c, path_of(c)) for c in held.chains],
                             t.data_ptr() if ptr else 0, _layout(t), ptr in weights, t.detach())
            self.startup[id(t)] = entry
            for p in held.paths:
                self.paths[p] = entry
            for chain in held.chains:
                for cut in range(len(chain)):
                    self.objects.setdefault(chain[:cut], resolve(chain[:cut]))
        self.objects = dict(sorted(self.objects.items(), key=lambda kv: len(kv[0])))
        self.seconds = time.perf_counter() - start
        report = self._report()
        report.seconds = self.seconds
        logger.info("guard: %d tensor(s) guarded, %d weight(s) watched", len(report.guarded),
                    report.weights)
        return report

    def guarded(self) -> list[str]:
        """Canonical paths of the guarded (non-weight, undeclared) tensors."""
        if self._guarded is None:
            self._guarded = sorted(s.paths[0] for s in self.startup.values() if not s.weight)
        return list(self._guarded)

    def _report(self) -> GuardReport:
        guarded = self.guarded()
        return GuardReport(guarded=guarded, weights=len(self.startup) - len(guarded))

    def restore(self, model: Any, *, strict: bool = False, full: bool = False,
                declared: Iterable[Any] = ()) -> GuardReport:
        """Bring every rebound slot back to its startup storage (see the module docstring).

        ``declared``: tensors a plan keeps now (never reported as new). ``strict``: raise
        :class:`RecaptureRequired` naming every slot that needs a recapture, before any write.
        ``full``: walk the whole model (finds new tensors on objects the engine kept too).
        """
        start = time.perf_counter()
        report = self._report()
        self._claimed = {}
        if not full and self._table().unchanged():  # nothing to restore, nothing new
            self.restores += 1
            report.seconds = time.perf_counter() - start
            return report
        declared_now = self.declared | {id(t) for t in declared if isinstance(t, torch.Tensor)}
        if full:
            actions = self._plan_walked(model, declared_now, report)
        else:
            actions = self._plan_resolved(model, declared_now, report)
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

    def _table(self) -> SlotTable:
        if self._slots is None:
            self._slots = SlotTable(
                self.objects, [(chain, s.tensor) for s in self.startup.values()
                               for chain, _ in s.chains],
                [(s.tensor, s.data_ptr) for s in self.startup.values() if s.data_ptr])
        return self._slots

    # ---- deciding: by following chains (default) -----------------------------------------------

    def _plan_resolved(self, model: Any, declared: set[int],
                       report: GuardReport) -> list[_Action]:
        resolve = _Resolver(model)
        actions: dict[tuple[int, int], _Action] = {}
        for entry in self.startup.values():
            for chain, path in entry.chains:
                t = resolve(chain)
                if t is MISSING or not isinstance(t, torch.Tensor):
                    report.recapture.append(SlotChange(path, Change.DISAPPEARED))
                    continue
                hold = (resolve(chain[:-1]), chain[-1])
                self._classify(entry, t, hold, path, declared, actions, report)
        rebuilt = self._rebuilt(resolve)
        if not rebuilt:
            return list(actions.values())
        by_new = {id(a.new): a for a in actions.values() if a.new is not None}
        roots = [obj for _, obj in rebuilt]
        for held in self._walk(roots):  # one walk over every rebuilt object
            t = held.tensor
            action = by_new.get(id(t))
            if action is not None:  # a rebound tensor: every holder in the rebuilt objects
                action.holds += [h for h in held.holds if h not in action.holds]
                continue
            if id(t) in self.startup or id(t) in declared:
                continue
            first = held.chains[0]  # ('[i]', ...): the i-th rebuilt object
            prefix = rebuilt[int(first[0][1:-1])][0]
            path = path_of((*prefix, *first[1:]))
            if path not in self.paths:
                report.recapture.append(SlotChange(path, Change.NEW, _describe(t)))
        return list(actions.values())

    def _rebuilt(self, resolve: _Resolver) -> list[tuple[Chain, Any]]:
        """The outermost objects on chains that are not the snapshot's objects any more."""
        out: list[tuple[Chain, Any]] = []
        seen: set[Chain] = set()
        for prefix, before in self.objects.items():  # shortest first
            if not prefix or any(prefix[:cut] in seen for cut in range(1, len(prefix))):
                continue
            now = resolve(prefix)
            if now is not before and now is not MISSING and not isinstance(now, torch.Tensor):
                out.append((prefix, now))
                seen.add(prefix)
        return out

    # ---- deciding: by walking everything (full) ------------------------------------------------

    def _plan_walked(self, model: Any, declared: set[int],
                     report: GuardReport) -> list[_Action]:
        found = self._walk(model)
        now: dict[str, Held] = {p: h for h in found for p in h.paths}
        actions: dict[tuple[int, int], _Action] = {}
        for path, entry in self.paths.items():
            held = now.get(path)
            if held is None:
                report.recapture.append(SlotChange(path, Change.DISAPPEARED))
                continue
            for hold in held.holds:
                self._classify(entry, held.tensor, hold, path, declared, actions, report)
        for held in found:
            t = held.tensor
            if id(t) in self.startup or id(t) in declared or any(p in self.paths
                                                                  for p in held.paths):
                continue
            report.recapture.append(SlotChange(held.paths[0], Change.NEW, _describe(t)))
        return list(actions.values())

    # ---- shared --------------------------------------------------------------------------------

    def _classify(self, entry: _Startup, t: torch.Tensor, hold: tuple[Any, str], path: str,
                  declared: set[int], actions: dict[tuple[int, int], _Action],
                  report: GuardReport) -> None:
        if t is entry.tensor:
            if entry.data_ptr and t.data_ptr() != entry.data_ptr and (
                    (id(t), 0) not in actions):
                self._decide(entry, None, hold, path, actions, report)
            return
        if id(t) in declared or id(t) in self.startup:
            return  # another startup tensor, or one a plan keeps: moved between slots
        action = actions.get((id(t), id(entry.tensor)))
        if action is not None:
            if hold not in action.holds:
                action.holds.append(hold)
            return
        self._decide(entry, t, hold, path, actions, report)

    def _decide(self, entry: _Startup, t: torch.Tensor | None, hold: tuple[Any, str],
                path: str, actions: dict[tuple[int, int], _Action],
                report: GuardReport) -> None:
        value = entry.tensor if t is None else t
        if _layout(value) != entry.layout:
            was = _describe_layout(entry.layout)
            report.recapture.append(SlotChange(path, Change.LAYOUT,
                                               f"{was} -> {_describe(value)}"))
            return
        if entry.weight and (t is None or not bits_equal(t, entry.keep)):
            report.recapture.append(SlotChange(path, Change.WEIGHT))
            return
        if t is not None:
            other = self._claimed.get(id(t))
            if other is not None and other.startup is not entry:
                # one new tensor now stands where two startup tensors stood
                report.recapture.append(SlotChange(path, Change.CONFLICT, other.path))
                return
        key = (id(value), id(entry.tensor)) if t is not None else (id(value), 0)
        actions[key] = action = _Action(entry, t, [hold], path)
        if t is not None:
            self._claimed[id(t)] = action

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
