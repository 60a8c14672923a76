"""Guard mode: keep every tensor a captured graph may read at its startup storage, no spec needed.

After the engine's first post-load step, :meth:`Guard.snapshot` records every tensor reachable
from the model (the runtime census walk: attributes, dicts/lists/tuples, ``functools.partial``
args, closure cells, nested objects) except the ones a plan declares, with the chain of path
pieces to each place holding it, and builds a :class:`~derivgraph.guard.watch.Watch` of every
object on those chains. After every later post-load step, :meth:`Guard.restore` sweeps the
watched containers (C-level sweeps of lengths and item identities: an unchanged container proves
nothing in it was rebound, removed or added; where the interpreter's dict version tags are
proven, only the dicts whose tag moved are compared; where their raw table words are proven,
each item is proven by its words and only the rest compared, :mod:`~derivgraph.guard.sweep`) and
the startup tensors' storage addresses (one gather of their storage words where proven, else one
C++ loop), diffs only the containers
that changed, descends the objects the engine rebuilt by the snapshot object's template (walking
whole only what does not match, to find tensors that are new), and:

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
to one is reported. Copies go in one ``_foreach_copy_`` per dtype and device; a holder kept in
a dict (a module registry or ``__dict__``, an object's ``__dict__``, a dict, a list) is
re-pointed by one store. A new tensor attached to a kept object on a chain is found by the
default restore; ``restore(full=True)`` walks the whole model instead, so one attached to a kept
object that held no tensor at the snapshot (off every chain) is reported too. The engine's
tensors are let go when the restore returns (the guard keeps only the startup ones).
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from derivgraph.addresses import AtAddresses
from derivgraph.audit.runtime.walk import gc_paused
from derivgraph.compare import bits_equal
from derivgraph.compiler.codegen import Program
from derivgraph.errors import RecaptureRequired
from derivgraph.guard import steady
from derivgraph.guard.holders import (
    Held,
    Repoint,
    held_tensors,
    lookup,
    path_of,
    repoint,
)
from derivgraph.guard.report import Change, GuardReport, SlotChange
from derivgraph.guard.watch import Store, Watch
from derivgraph.runtime.engine import foreach_copy

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
    return t.shape, t.stride(), t.dtype, t.device  # a torch.Size compares as a tuple


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


class _Action:
    """One slot to restore: the engine's tensor (None: the startup tensor was pointed at other
    storage) and every place holding it, each with its direct store or None."""

    __slots__ = ("startup", "new", "path", "holds", "stores")

    def __init__(self, startup: _Startup, new: torch.Tensor | None, path: str) -> None:
        self.startup, self.new, self.path = startup, new, path
        self.holds: list[tuple[Any, str]] = []
        self.stores: list[Store] = []

    def hold(self, holder: Any, piece: str, store: Store = None) -> None:
        for h, p in self.holds:  # one or two holders: a scan is cheaper than a set per action
            if h is holder and p == piece:
                return
        self.holds.append((holder, piece))
        self.stores.append(store)


class Guard:
    """Snapshot after the first post-load step; :meth:`restore` after each later one."""

    def __init__(self, *, max_depth: int = 12, max_objects: int = 500_000) -> None:
        self.max_depth, self.max_objects = max_depth, max_objects
        self.startup: dict[int, _Startup] = {}
        self.paths: dict[str, _Startup] = {}
        self.objects: dict[Chain, Any] = {}  # every holder on a chain, as at the snapshot
        self.finals: dict[Chain, tuple[_Startup, str]] = {}  # each guarded chain: entry, path
        self.watch: Watch | None = None
        self._at = AtAddresses([], [], hold=True)  # the startup tensors at their addresses
        self._moved: list[_Startup] = []  # their entries, in the same order
        self.declared: set[int] = set()
        self.restores = 0
        self.seconds = 0.0
        self._claimed: dict[int, _Action] = {}  # new tensor id -> its action (one restore)
        self._guarded: list[str] | None = None
        self._rebound: dict[str, SlotChange] = {}  # each slot's "rebound" record (frozen)
        self._steady: Program | None = None  # the steady restore entry (guard.steady)
        self._steady_for: tuple[Any, ...] = ()  # the watch and proof it was made over

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
        self._steady, self._steady_for = None, ()  # it holds the watch made now
        weights = weight_storages(model)
        self.startup, self.paths, self.objects, self._guarded = {}, {}, {}, None
        self._rebound = {}
        self.finals = {}
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
            for (chain, path), hold in zip(entry.chains, held.holds):
                self.finals[chain] = (entry, path)
                self.objects.setdefault(chain[:-1], hold[0])
        self.objects[()] = model
        for chain in sorted(self.objects, key=len):
            for cut in range(1, len(chain)):  # the objects between the model and each holder
                if chain[:cut] not in self.objects:
                    self.objects[chain[:cut]] = lookup(self.objects[chain[:cut - 1]],
                                                       chain[cut - 1])
        self.objects = dict(sorted(self.objects.items(), key=lambda kv: len(kv[0])))
        self.watch = Watch(self.objects, self.finals)
        moved = [e for e in self.startup.values() if e.data_ptr]
        self._moved = moved
        self._at = AtAddresses([e.tensor for e in moved], [e.data_ptr for e in moved],
                               hold=True)
        self._at.intact()  # the addresses were just read: the words are taken now
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

    def source(self) -> str:
        """Exactly the Python that :meth:`restore` runs first: the steady restore entry
        (:mod:`derivgraph.guard.steady`), which falls back to the library's restore; a comment
        line where none is made (the library's restore runs)."""
        fast = self._steady
        if fast is None or not steady.ENABLED:
            return "# no steady restore entry: restore() runs Guard._restore_slow\n"
        return fast.source

    def restore(self, model: Any, *, strict: bool = False, full: bool = False,
                declared: Iterable[Any] | Callable[[], Iterable[Any]] = (),
                storage_kept: bool = False) -> GuardReport:
        """Bring every rebound slot back to its startup storage (see the module docstring).

        ``declared``: tensors a plan keeps now (never reported as new), or a function returning
        them, called only when something changed (the common reload reads none). ``strict``: raise
        :class:`RecaptureRequired` naming every slot that needs a recapture, before any write.
        ``full``: walk the whole model (finds new tensors on objects the engine kept too).
        ``storage_kept``: the caller proved every startup tensor at its startup address
        (:attr:`addresses`, the rule of :meth:`storage_kept`) after the engine's post-load
        step, nothing re-pointed since: the default restore does not check them again.

        Once a restore found nothing to do, the steady entry (:mod:`derivgraph.guard.steady`,
        printed by :meth:`source`) runs: the same path as one function, falling back to the
        library's restore before any write when anything differs.
        """
        fast = self._steady
        if fast is not None and steady.ENABLED:
            return fast.fn(model, strict=strict, full=full, declared=declared,
                           storage_kept=storage_kept)
        return self._restore_slow(model, strict=strict, full=full, declared=declared,
                                  storage_kept=storage_kept)

    def _restore_slow(self, model: Any, *, strict: bool = False, full: bool = False,
                      declared: Iterable[Any] | Callable[[], Iterable[Any]] = (),
                      storage_kept: bool = False) -> GuardReport:
        """:meth:`restore` by the library; then the steady entry made (again) where this
        restore found nothing to do over another watch or proof than the entry's."""
        start = time.perf_counter()
        report = self._report()
        self._claimed = {}
        unwritten = False  # nothing stored since the watch's sweep (its tags need no re-read)
        try:
            if full:
                with gc_paused():  # short-lived objects only: no full collection over the heap
                    actions = self._plan_walked(model, self._declared_ids(declared), report)
            else:  # the common reload walks nothing (a walk pauses the collector itself)
                actions = self._plan_watched(declared, report, storage_kept)
                unwritten = not actions
            if strict and report.recapture:
                raise RecaptureRequired([c.describe() for c in report.recapture])
            if actions:
                with torch.no_grad():
                    self._apply(actions, report)
        finally:
            self._claimed = {}  # the engine's tensors are not kept alive past the restore
            if self.watch is not None:
                self.watch.sweep.settle(unwritten=unwritten)  # after the restore's own stores
        self.restores += 1
        report.seconds = time.perf_counter() - start
        if unwritten and steady.ENABLED:
            self._make_steady()
        if report.recapture:
            logger.warning("guard: %d slot(s) need a graph recapture: %s", len(report.recapture),
                           "; ".join(c.describe() for c in report.recapture[:8]))
        return report

    def _make_steady(self) -> None:
        """(Re)make the steady entry where the watch or its proof is not the one it was made
        over (a restore that found nothing to do: the state it covers)."""
        watch = self.watch
        sweep = None if watch is None else watch.sweep
        gather = None if sweep is None or sweep.whole is None else sweep.gathers.get(sweep.whole)
        key = (watch, gather, None if gather is None else gather.slots)
        if len(key) == len(self._steady_for) and all(map(operator.is_, key, self._steady_for)):
            return
        self._steady_for = key
        self._steady = steady.build(self)

    # ---- deciding: by the watch (default) ------------------------------------------------------

    def _declared_ids(self, declared: Iterable[Any] | Callable[[], Iterable[Any]]) -> set[int]:
        tensors = declared() if callable(declared) else declared
        return self.declared | {id(t) for t in tensors if isinstance(t, torch.Tensor)}

    def _plan_watched(self, tensors: Iterable[Any] | Callable[[], Iterable[Any]],
                      report: GuardReport, kept: bool = False) -> list[_Action]:
        assert self.watch is not None, "restore() before snapshot()"
        survey = self.watch.survey()
        # the plan's tensors are read only when something changed (the common reload: nothing)
        changed = survey.places or survey.loose or survey.roots
        declared = self._declared_ids(tensors) if changed else self.declared
        actions: dict[tuple[int, int], _Action] = {}
        if survey.gone:
            report.recapture += [SlotChange(path, Change.DISAPPEARED) for _, path in survey.gone]
        for place in survey.places:
            entry, path = place.slot
            self._classify(entry, place.value, (place.holder, place.piece), path, declared,
                           actions, report, place.store)
        if not kept:  # else proven by the caller (see restore's storage_kept)
            self._moved_storage(actions, report)
        if not survey.loose and not survey.roots:
            return list(actions.values())
        by_new = {id(a.new): a for a in actions.values() if a.new is not None}
        for place in survey.loose:
            self._found(place.value, path_of(place.slot), [(place.holder, place.piece)],
                        [place.store], by_new, declared, report)
        roots = survey.roots
        if roots:
            for held in self._walk([obj for _, obj in roots]):  # one walk over all of them
                first = held.chains[0]  # ('[i]', ...): under the i-th root
                path = path_of((*roots[int(first[0][1:-1])][0], *first[1:]))
                self._found(held.tensor, path, held.holds, [None] * len(held.holds), by_new,
                            declared, report)
        return list(actions.values())

    def _found(self, t: torch.Tensor, path: str, holds: list[tuple[Any, str]],
               stores: list[Store], by_new: dict[int, _Action], declared: set[int],
               report: GuardReport) -> None:
        """A tensor found off the guarded chains: a rebound one's other holders, or new."""
        action = by_new.get(id(t))
        if action is not None:
            for (holder, piece), store in zip(holds, stores):
                action.hold(holder, piece, store)
        elif id(t) not in self.startup and id(t) not in declared and path not in self.paths:
            report.recapture.append(SlotChange(path, Change.NEW, _describe(t)))

    def _moved_storage(self, actions: dict[tuple[int, int], _Action],
                       report: GuardReport) -> None:
        """Startup tensors pointed at other storage (``.data =``): one sweep of addresses."""
        if self.storage_kept():
            return
        at = self._at
        now = list(map(torch.Tensor.data_ptr, at.tensors))
        for entry, was, ptr in zip(self._moved, at.ptrs, now):
            if ptr != was and (id(entry.tensor), 0) not in actions:
                self._decide(entry, None, None, entry.paths[0], actions, report, None)

    @property
    def addresses(self) -> AtAddresses:
        """The startup tensors and their startup data addresses that :meth:`storage_kept`
        checks (made by :meth:`snapshot`: a caller may check them with its own tensors, by
        the same rule, and pass ``storage_kept`` to :meth:`restore`)."""
        return self._at

    def storage_kept(self) -> bool:
        """Every startup tensor still points at its startup storage
        (:meth:`AtAddresses.intact <derivgraph.addresses.AtAddresses.intact>`)."""
        return self._at.intact()

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
        self._moved_storage(actions, report)
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
                  report: GuardReport, store: Store = None) -> None:
        if t is entry.tensor:
            return  # in place; pointed at other storage (``.data =``): see _moved_storage
        tid = id(t)
        if tid in declared or tid in self.startup:
            return  # another startup tensor, or one a plan keeps: moved between slots
        action = actions.get((tid, id(entry.tensor)))
        if action is not None:
            action.hold(*hold, store)
            return
        self._decide(entry, t, hold, path, actions, report, store)

    def _decide(self, entry: _Startup, t: torch.Tensor | None, hold: tuple[Any, str] | None,
                path: str, actions: dict[tuple[int, int], _Action],
                report: GuardReport, store: Store) -> None:
        value = entry.tensor if t is None else t
        if _layout(value) != entry.layout:
            was = _describe_layout(entry.layout)
            report.recapture.append(SlotChange(path, Change.LAYOUT,
                                               f"{was} -> {_describe(value)}"))
            return
        if entry.weight and (t is None or not bits_equal(t, entry.keep)):
            report.recapture.append(SlotChange(path, Change.WEIGHT))
            return
        tid = id(value)
        if t is not None:
            other = self._claimed.get(tid)
            if other is not None and other.startup is not entry:
                # one new tensor now stands where two startup tensors stood
                report.recapture.append(SlotChange(path, Change.CONFLICT, other.path))
                return
        actions[(tid, id(entry.tensor) if t is not None else 0)] = action = _Action(entry, t,
                                                                                     path)
        if hold is not None:
            action.hold(*hold, store)
        if t is not None:
            self._claimed[tid] = action

    def _apply(self, actions: list[_Action], report: GuardReport) -> None:
        """Copy every rebound value into its startup storage (one ``_foreach_copy_`` per dtype
        and device), then point each holder back at the startup tensor."""
        rebound = [a for a in actions if a.new is not None and not a.startup.weight]
        foreach_copy([a.startup.keep for a in rebound], [a.new for a in rebound])
        for action in actions:
            entry = action.startup
            if action.new is None:  # the startup tensor itself was pointed at other storage
                entry.keep.copy_(entry.tensor.detach())
                entry.tensor.data = entry.keep
                report.restored.append(SlotChange(action.path, Change.STORAGE))
                continue
            fixed = []
            for (holder, piece), store in zip(action.holds, action.stores):
                if store is not None:
                    store[0][store[1]] = entry.tensor
                elif repoint(holder, piece, entry.tensor) is Repoint.FIXED:
                    fixed.append(piece)
            if fixed:
                report.copied_only.append(SlotChange(action.path, Change.FIXED_HOLDER,
                                                     ", ".join(fixed)))
            else:
                change = self._rebound.get(action.path)  # the same slot, the same record
                if change is None:
                    change = self._rebound[action.path] = SlotChange(
                        action.path, Change.WEIGHT_REPOINTED if entry.weight else Change.REBOUND)
                report.restored.append(change)


def _describe_layout(layout: tuple[Any, ...]) -> str:
    shape, stride, dtype, device = layout
    return f"{str(dtype).removeprefix('torch.')}{list(shape)} stride {list(stride)} {device}"


def _describe(t: torch.Tensor) -> str:
    return _describe_layout(_layout(t))
