"""The compiled plan at run time: the in-place reload pass, capture, and holder re-binding.

:meth:`Plan.run` is the reload pass: generated Python (:mod:`derivgraph.compiler.codegen`) that
writes into the startup storage through ``torch._foreach_*`` and ``out=`` calls over tensors
bound at compile (on CPU, a group of many small tensors as one gather, one op and one scatter
over the memory that holds them: :mod:`derivgraph.compiler.flat`), then re-binds every holder
the engine rebuilt. :meth:`Plan.capture` records
the pass into one CUDA graph (on CPU: a dispatch recording) that :meth:`Plan.run` replays. No
step synchronizes with the host and no step allocates a tensor a captured graph can see.

Faults: the pass never writes a source, and every derived tensor it writes is a pure function of
the sources (never of its own previous value). An op that raises mid-pass therefore leaves every
source untouched and some derived tensors half-written; :class:`PassFault` names the node and
its owner, and any later full run rewrites every derived tensor from the sources, bit-exact. The
same holds when the pass is interrupted for any other reason (``KeyboardInterrupt``, a killed
worker thread): nothing outside the derived storage was written and holders are re-bound only
after the pass, so a rerun fixes everything. (A killed *process* takes the model with it.)

A plan is small objects, one concept each: where tensors live (:mod:`.storage`, :mod:`.entry`),
what runs (:mod:`.programs`), how holders are re-pointed (:mod:`.holders`, :mod:`.containers`)
and what a run reports (:mod:`.report`). Plans are made by
:func:`derivgraph.planner.compile_plan`, which also installs :attr:`Plan.relayout`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

import torch
from torch import nn

from derivgraph.addresses import AtAddresses
from derivgraph.compiler.codegen import Program
from derivgraph.compiler.fold import FoldSet
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.interpret import EagerInterpreter, view_base
from derivgraph.compiler.lower import Step
from derivgraph.errors import PassFault, SourceChanged
from derivgraph.runtime import steady
from derivgraph.runtime.accessors import HeldColumn, PathReads
from derivgraph.runtime.containers import ContainerHolder, restore_containers
from derivgraph.runtime.engine import (
    RefillTable,
    opaque_entries,
    refuse_recompute,
    take_engine_values,
)
from derivgraph.runtime.entry import (  # noqa: F401 - Entry, address_of re-exported
    Entry,
    EntryTable,
    HeldRows,
    TableColumn,
    address_of,
)
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.programs import PassKind, Programs
from derivgraph.runtime.replay import CpuPass, WriteRecorder, storages_read
from derivgraph.runtime.report import RunReport, rows
from derivgraph.runtime.source_ptrs import SourcePtrs
from derivgraph.runtime.storage import BoundTensors
from derivgraph.spec.kinds import TENSOR_KINDS

__all__ = ["TENSOR_KINDS", "Entry", "PassFault", "Plan", "SourceChanged", "Step", "address_of"]

_STORAGE, _IS_CUDA = attrgetter("storage"), attrgetter("is_cuda")
_PLAIN = (torch.Tensor, nn.Parameter)  # classes whose ``is_cuda`` no override answers


class Plan:
    """The compiled, bound derived-tensor plan of one model.

    :attr:`entries`: every derived tensor's :class:`Entry` by model path, in the compile's
    order, as a read-only :class:`~collections.abc.Mapping`
    (:class:`~derivgraph.runtime.entry.EntryTable`: the stamped layers' entry columns and the
    other entries), not a ``dict``."""

    def __init__(self, model: nn.Module, graph: DerivedGraph):
        self.model = model
        self.graph = graph
        #: every derived tensor's :class:`Entry` by id: a read-only Mapping (see EntryTable)
        self.entries = EntryTable()
        by_id = self.entries.by_id  # what the plan's own parts read
        #: the sources' startup record: path -> (object id, address) (set by compile_plan)
        self.source_ptrs: Mapping[str, tuple[int, int]] = SourcePtrs([], [], [])
        self.strict = True
        self.constant_entries: list[str] = []  # derived tensors no source feeds
        self.constant_values: dict[str, torch.Tensor] = {}  # their values, made at compile
        self.folds = FoldSet()  # set by compile_plan
        self.containers: list[ContainerHolder] = []  # tuples kept for life (.containers)
        # permissive reload (run(strict=False)): re-infer and re-allocate; set by compile_plan
        self.relayout: Callable[[Plan, list[str]], list[str]] | None = None
        self.tensors = BoundTensors(graph, by_id, self.entries)
        self.holders = Holders(model, by_id, self.entries)
        self.holders.startup = self.tensors.startup_addresses  # one address check for both
        self.programs = Programs(self.tensors, by_id)
        self.programs.helpers = {
            "restore_storage": self.tensors.restore_storage, "apply_folds": self._apply_folds,
            "rewrite_stale_constants": self._rewrite_stale_constants, "replay": self._replay,
            "execute": self.programs.execute, "take_engine_values": self._take_engine_values,
            "pass_for": self._pass_for, "set_scalars": self._set_scalars, "rebind": self.rebind}
        self._constants_from_engine = False  # a refill wrote engine values into constants
        # a full run() of a captured plan replays before its host checks (None: on CUDA)
        self.overlap_checks: bool | None = None
        self._keep: list[Any] = []  # every storage the recording reads, kept alive by the plan
        self._grouped = True
        self._recording: Any = None  # the captured pass: a CUDA graph or a CPU recording
        self._captured = False
        self._cuda: bool | None = None
        self._opaque_ids: list[str] | None = None
        self._refill_table: RefillTable | None = None  # refill targets, through the accessors
        # what a refill still computes, by the mask of its batched read (None: every target)
        self._taken_rest: dict[tuple[bool, ...] | None, frozenset[str] | None] = {}
        self._rest: dict[frozenset[str], frozenset[str]] = {}  # what a refill still computes
        # the last batched read of a refill: (its report, its mask; None: every target)
        self._last_take: tuple[RunReport, tuple[bool, ...] | None] | None = None
        self._steady: Program | None = None  # the steady refill entry (runtime.steady)

    def hold_rows(self, ids: list[str], columns: Sequence[TableColumn]) -> HeldRows | None:
        """Hold the entry columns' rows by column (the compile, before it fills the entry
        table: :meth:`~derivgraph.runtime.entry.EntryTable.hold`): no entry object per held
        row is made; one is made where a reader asks for it. Only where the plan's parts read
        the entries through :attr:`~derivgraph.runtime.entry.EntryTable.by_id` (the same
        mapping): they take the new mapping. Returns it (None: not held)."""
        by_id, parts = self.entries.by_id, (self.tensors, self.holders, self.programs)
        if any(part.entries is not by_id for part in parts):
            return None
        rows = self.entries.hold(ids, columns, self.graph.derived_ids)
        if rows is not None:
            for part in parts:
                part.entries = rows
        return rows

    # ---- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.entries)

    @property
    def steps(self) -> list[Step]:
        """Every per-node step of the full pass, in topological order."""
        return self.programs.steps

    @property
    def program(self) -> Program | None:
        """The full pass as compiled."""
        return self.programs.program

    @property
    def bindings(self) -> dict[str, Any]:
        """The globals of the generated code, by name."""
        return self.programs.bindings.globals

    @property
    def meta_env(self) -> dict[str, Any]:
        """Node id -> its inferred value on the meta device."""
        return self.tensors.meta_env

    @meta_env.setter
    def meta_env(self, value: dict[str, Any]) -> None:
        self.tensors.meta_env = value

    @property
    def constants(self) -> dict[str, torch.Tensor]:
        """Op nodes no source feeds: their values, made at compile."""
        return self.tensors.constants

    def declared(self) -> dict[str, Any]:
        """Model path -> the startup object of every declared derived tensor (in the order of
        :attr:`entries`)."""
        return {k: e.storage for k, e in self.entries.by_id.items()}

    def declared_storages(self) -> Iterable[Any]:
        """The startup object of every declared derived tensor, read lazily (the entry
        columns' first, then the other entries; no per-entry mapping is made)."""
        return self.entries.storages()

    def not_refillable(self) -> list[str]:
        """Derived Python scalars: a captured graph baked their value; only recapture helps."""
        return self.entries.scalars()

    def rows(self) -> list[dict[str, Any]]:
        """One row per derived tensor: node, owner, kind, shape, dtype, bytes, op, spec."""
        return rows(self.entries, self.graph)

    def source(self, kind: str = "run", *, updated: Iterable[str] | None = None) -> str:
        """Exactly the Python that :meth:`run` (``kind="run"``, with ``updated``) or
        :meth:`refill` (``kind="refill"``) executes.

        A header lists what each bound name holds; then the entry function the call runs and
        the pass it calls (``torch`` is torch, ``ops`` the op registry, the other names plan
        helpers). Executed in a copy of :attr:`bindings`, the text computes what the call does.
        The steady refill entry, once made (:mod:`derivgraph.runtime.steady`), comes first:
        ``refill()`` runs it, and it falls back to the entry printed after it.
        """
        assert self.program is not None
        kind = PassKind(kind)
        names = None if updated is None else tuple(updated)
        launched = names is None and kind is PassKind.RUN and self._launches()
        entry = self._entry(kind, names, launched)
        called = [self.program if names is None or kind is PassKind.REFILL else
                  self.programs.partial(self._needed_nodes(names))]
        fast = self._steady if kind is PassKind.REFILL and names is None and steady.ENABLED \
            else None
        if fast is not None:
            called += fast.calls  # the partial pass it calls
            return fast.source + "\n" + self.programs.source(entry, called)
        return self.programs.source(entry, called)

    def view_base(self, node_id: str) -> str:
        return view_base(self.graph, node_id)

    def evaluate(self) -> dict[str, Any]:
        """Every node's value computed eagerly, one op at a time (the reference for tests)."""
        with torch.no_grad():
            return EagerInterpreter(self.graph).run()

    def moved(self) -> list[str]:
        """Bound tensors or sources whose holder now has another object or address."""
        return self.holders.moved(self.source_ptrs)

    # ---- binding (compile_plan, and a reload whose sources moved) ----------------------------
    def bind_tensors(self, read: Mapping[str, Any] | None = None,
                     columns: Iterable[HeldColumn] = (), reads: PathReads | None = None) -> None:
        """Resolve sources, views over bound tensors, and the holder checks (no code).

        ``read``: every source path's object, read from the model as it is now (the compile's
        startup record); else the sources are read here. ``columns``: entry columns the
        compile proved held in their owners' ``__dict__`` only (:meth:`Holders.bind`). With
        ``read``, the sources' addresses are those the startup record took of its objects
        (``source_ptrs``, where it names them: ``read`` holds them, nothing re-pointed them),
        and ``reads``: what reading ``read`` read on the way (:meth:`Holders.bind`)."""
        self._steady = None  # it holds the objects bound now
        self.tensors.bind(self.model, read)
        self.holders.bind(self.tensors.sources, columns,
                          self.source_ptrs if read is not None else None,
                          reads if read is not None else None)

    def install(self, steps: list[Step], *, group: bool = True) -> Program:
        """Compile ``steps`` as the pass (grouped into foreach calls unless ``group=False``)."""
        self._grouped = group
        self._recording, self._captured, self._keep = None, False, []
        self._steady = None
        return self.programs.install(steps, group=group)

    def _bind_all(self) -> None:
        self.bind_tensors()
        self.install(self.programs.lowered, group=self._grouped)

    def prepare(self) -> None:
        """Build now what the first run and the first refill of a process would build lazily
        (compile_plan and :meth:`capture` call this; a re-bind after moved sources, already a
        recapture, leaves it to the next run): the refill table with its flat
        copies (:class:`~derivgraph.runtime.engine.RefillTable`), what a full refill still
        computes, the entry functions of a full run and a refill, and the proofs the checks
        keep: the source checks with their dict tags and storage words, the holders' dict tags,
        and the storage words of the holders' storages and of the startup tensors (taken from
        the holders' where those hold every one: :meth:`BoundTensors.take_startup_words
        <derivgraph.runtime.storage.BoundTensors.take_startup_words>`). Each proof is taken
        only by a full check passing here (the state now, just bound); a check that fails takes
        none and the run decides as without this."""
        if self.program is None:
            return
        self.holders.sources_intact()  # the full source check: its tags and words once proven
        held = self.holders.table
        at = held.addresses()
        untaken = at.words is None  # a check that passes now takes them from the state it proved
        # the holders' storages' words (moved), then the startup tensors' taken from them where
        # the table holds every one, else by their own full check
        at_startup = held.at_startup_addresses()
        if not (at_startup and self.tensors.take_startup_words(at, held.entries)):
            self.tensors.startup_addresses().intact()
        # the words just taken describe the state now: nothing below moves a storage (checks,
        # the owners' walk and its accessors, the tags), so the refill table takes the
        # addresses they proved without gathering them again
        proven = at_startup and untaken and at.words is not None
        if self.holders.hops is not None and self.holders.owners_current():
            self.holders.table.changed()  # a full sweep; nothing stale: the tags are settled
            table = self._refill_table_now(proven and held is self.holders.table)
            if table.complete:
                self._rest_for(None, table)
        self._entry(PassKind.REFILL, None)
        self._entry(PassKind.RUN, None, self._launches())

    # ---- running -----------------------------------------------------------------------------
    def run(self, updated: Iterable[str] | None = None, *, verify: bool = False,
            take_engine_values: bool = False, strict: bool | None = None,
            after: AtAddresses | None = None) -> RunReport:
        """Recompute derived tensors into their startup storage, then re-bind holders.

        ``updated``: source paths (exact, prefix or glob) that changed; only their dirty cone is
        recomputed (every holder the engine rebuilt is re-bound). ``None`` recomputes everything
        (a replay when :meth:`capture` d). ``take_engine_values``: where the engine's post-load
        step left a new tensor at a holder (same shape and dtype), copy its value instead of
        recomputing (the layerwise-reload refill). ``verify`` checks that no bound tensor or
        source changed object or address. ``strict`` (default: the plan's ``strict``) refuses a
        source whose shape or dtype changed; otherwise the affected derived tensors are
        re-allocated and reported (graph recapture required). :meth:`source` prints the code.
        A full run of a captured plan on CUDA launches the replay before its host checks
        (:attr:`overlap_checks`; see :meth:`capture`). ``after``: with ``verify``, tensors a
        later check of the same reload needs at fixed addresses, checked with the holders'
        storages in one check (:meth:`Holders.moved
        <derivgraph.runtime.holders.Holders.moved>`; proven: ``holders.after_checked`` is the
        report).
        """
        names = None if updated is None else tuple(updated)
        if not take_engine_values and self._opaque():  # refused before anything is written
            refuse_recompute(self.entries.by_id, names)
        report = RunReport(mode="refill" if take_engine_values else "recompute")
        start = time.perf_counter()
        launched = names is None and not take_engine_values and self._launch(report)
        if not self.holders.sources_intact(report):
            if launched:  # it read the startup sources (kept alive): wait, then run eagerly
                self._wait()
                report.replayed, launched = False, False
                report.steps = report.written = report.bytes = 0
            self._sources_changed(report, self.strict if strict is None else strict)
        kind = PassKind.REFILL if take_engine_values else PassKind.RUN
        fn = self._entry(kind, names, launched).fn
        # the source check just proved the startup tensors at their addresses too (nothing
        # ran since): the entry's first statement, restore_storage, takes that proof once
        self.tensors.at_startup = self.holders.startup_checked is report
        try:
            if torch.is_grad_enabled():
                with torch.no_grad():
                    fn(report)
            else:  # already off (vLLM reloads under no_grad): the context would switch nothing
                fn(report)
        finally:
            self.tensors.at_startup = False
        report.seconds = time.perf_counter() - start
        if verify:  # this run's source check stands (see Holders.moved)
            report.moved = self.holders.moved(self.source_ptrs, report, after)
        return report

    def _opaque(self) -> list[str]:
        """The engine tensors no step makes (found once: entries are fixed at compile), read
        from the generic entries only (the table's order): an entry column's rows are of kind
        attribute or alias, proved row by row or from their one declaration
        (:func:`~derivgraph.runtime.entry_columns.entry_columns`), so never engine tensors."""
        if self._opaque_ids is None:
            self._opaque_ids = opaque_entries(self.entries.generic)
        return self._opaque_ids

    def refill(self, *, verify: bool = False, after: AtAddresses | None = None) -> RunReport:
        """After an engine reran its post-load step: keep its values, restore our storage.

        Once two refills in a row took the same holders from the engine, the steady entry
        (:mod:`derivgraph.runtime.steady`) runs: the same path as one function, falling back to
        :meth:`run` before any write when anything differs. ``after``: as :meth:`run`'s."""
        fast = self._steady
        if fast is not None and steady.ENABLED:
            return fast.fn(verify, after)
        return self._refill_slow(verify, after)

    def _refill_slow(self, verify: bool, after: AtAddresses | None = None) -> RunReport:
        """:meth:`run`'s refill; then the steady entry made where this refill's batched read
        took the same part mask as the last one (the engine rebuilds the same holders)."""
        last = self._last_take
        report = self.run(None, verify=verify, take_engine_values=True, after=after)
        taken = self._last_take
        if steady.ENABLED and taken is not None and taken[0] is report \
                and taken[1] is not None and last is not None and last[1] == taken[1]:
            self._steady = steady.build(self, taken[1], after)
        return report

    def _entry(self, kind: PassKind, names: tuple[str, ...] | None,
               launched: bool = False) -> Program:
        built = self.programs.built_entry(kind, names, launched)  # every reload after the first
        if built is not None:
            return built
        needed = frozenset() if names is None else self._needed_nodes(names)
        return self.programs.entry(kind, names, needed, list(self.folds.entries.values()),
                                   bool(self.constant_entries), launched=launched)

    # ---- the captured pass, launched before the host checks ----------------------------------
    def _launches(self) -> bool:
        """Whether a full :meth:`run` launches the recording before its host checks.

        Only a captured plan with nothing to write before the pass (no fold, no constant a
        refill overwrote); :attr:`overlap_checks` (default: on CUDA, where a replay is
        asynchronous) picks the order.
        """
        overlap = self.overlap_checks
        if overlap is None:
            overlap = self._on_cuda()
        return overlap and self._captured and self._recording is not None \
            and not self.folds.entries and not self._constants_from_engine

    def _launch(self, report: RunReport) -> bool:
        """Replay the recording now, before the host checks that then overlap it on CUDA.

        Safe because the recording writes only derived storage (never a source) and keeps
        every storage it reads alive (:attr:`_keep`): if a check then fails, :meth:`run`
        waits and runs eagerly, which rewrites every derived tensor from the current sources.
        """
        if not self._launches():
            return False
        self._recording.replay()
        report.replayed = True
        self.programs.count(self.programs.program, report)
        return True

    def _wait(self) -> None:
        """Wait for a launched replay (a no-op on CPU, where a replay is synchronous)."""
        if self._on_cuda():
            torch.cuda.current_stream().synchronize()

    def _needed_nodes(self, names: tuple[str, ...]) -> frozenset[str]:
        return self.programs.needed(names, self.source_ptrs)

    # ---- helpers the generated entry functions call ------------------------------------------
    def _apply_folds(self, updated: list[str] | None, report: RunReport) -> None:
        self.folds.apply(self.model, updated, report)

    def _rewrite_stale_constants(self, report: RunReport) -> None:
        if self._constants_from_engine:
            self.rewrite_constants(report)

    def _replay(self, fn: Any, report: RunReport) -> None:
        if self._captured and self._recording is not None:
            self._recording.replay()
            report.replayed = True
            self.programs.count(self.programs.program, report)
        else:
            self.programs.execute(fn, report)

    def _take_engine_values(self, report: RunReport) -> frozenset[str] | None:
        """Copy the engine's fresh values in; returns what the pass must still compute (None:
        everything, nothing was taken)."""
        batched = self._take_batched(report)
        if batched is not None:
            constants, rest = batched
            self._constants_from_engine |= constants
            return rest
        owners = self.holders.walk().objects  # the per-entry path, the reference (the engine
        self.holders.refresh()  # rebuilt holders: rebind reuses this walk)
        taken = take_engine_values(self.model, self.entries.by_id, self._refill_targets(), owners,
                                   report)
        self._constants_from_engine |= any(n in taken for n in self.constant_entries)
        return self._rest_after(taken)

    def _rest_after(self, taken: Collection[str]) -> frozenset[str] | None:
        """What a refill that took ``taken`` from the engine still computes (computed once per
        set); None when nothing was taken."""
        if not taken:
            return None
        key = frozenset(taken)
        rest = self._rest.get(key)
        if rest is None:
            left = not key.issuperset(self.programs.targets())  # a step it still runs
            rest = self._rest[key] = frozenset(
                n for s in self.steps for n in (s.node, s.target)
                if n and s.target not in key) if left else frozenset()
        return rest

    def _refill_targets(self) -> list[str]:
        return self.programs.written() + self.constant_entries + self._opaque()

    def _take_batched(self, report: RunReport) -> tuple[bool, frozenset[str] | None] | None:
        """The engine's fresh values through the holder accessors, one ``_foreach_copy_``:
        (whether a constant was taken, what the pass still computes); None when the accessors
        cannot prove every target (nothing was copied then)."""
        holders = self.holders
        if not holders.owners_current_for(report):
            return None
        table = self._refill_table_now()
        current = holders.table.current()
        taken = table.take(current)
        if taken is None:
            return None
        taken.copy()
        self._last_take = (report, taken.mask)
        # this run's rebind reuses the read; every holder holds a fresh tensor when the
        # targets are the whole table and the engine rebuilt them all
        holders.note_read(report, current, every=table.whole and taken.mask is None)
        report.bytes += taken.nbytes
        report.taken_from_engine = report.written = report.steps = len(taken.ours)
        return taken.constants, self._rest_for(taken.mask, table)

    def _refill_table_now(self, at_startup: bool = False) -> RefillTable:
        """The refill table over the holders' current table (made once per holder table;
        ``at_startup``: :class:`RefillTable`'s, the caller's proof)."""
        holders = self.holders
        table = self._refill_table
        if table is None or table.table is not holders.table:
            table = self._refill_table = RefillTable(
                holders.table, self._refill_targets(), set(self.constant_entries),
                set(self._opaque()), self.tensors.layouts, at_startup)
            self._rest, self._taken_rest = {}, {}
        return table

    def _rest_for(self, mask: tuple[bool, ...] | None, table: RefillTable) \
            -> frozenset[str] | None:
        """What a refill whose batched read took ``mask`` of ``table`` still computes (None:
        every target, the common case: no tuple hashed)."""
        if mask in self._taken_rest:
            return self._taken_rest[mask]
        rest = self._taken_rest[mask] = self._rest_after(
            table.ids if mask is None else list(compress(table.ids, mask)))
        return rest

    def _pass_for(self, nodes: frozenset[str]) -> Any:
        return self.programs.partial(nodes).fn

    def _set_scalars(self, targets: list[str], report: RunReport) -> None:
        staged = self.tensors.staged_if_changed(targets)  # one host transfer per buffer
        if staged is None:  # the common reload: every number as it was (nothing to set)
            return
        entries = self.entries.by_id
        for target in targets:
            entry = entries[target]
            new = float(staged[target]) if entry.storage.__class__ is float else staged[target]
            if new != entry.storage and not (new != new and entry.storage != entry.storage):
                report.recapture_required.append(target)
                entry.storage = new
                self.holders.rebind_entries([entry], report)

    def rewrite_constants(self, report: RunReport | None = None) -> int:
        """Write the compile-time values back into every constant derived tensor.

        Constants (derived tensors no source feeds) are not in the pass. Call this when their
        memory may have been lost or overwritten: vLLM's level-2 sleep discards it, and a
        refill keeps the engine's values (the next recompute calls this once by itself).
        Returns how many tensors were written.
        """
        keys = [n for n in self.constant_entries if n in self.constant_values]
        with torch.no_grad():
            if keys:  # _foreach_copy_ refuses empty lists
                entries = self.entries.by_id
                torch._foreach_copy_([entries[n].storage for n in keys],
                                     [self.constant_values[n] for n in keys])
        if report is not None:
            report.written += len(keys)
        self._constants_from_engine = False
        return len(keys)

    # ---- capture -----------------------------------------------------------------------------
    def capture(self) -> None:
        """Record the full recompute pass once; :meth:`run` (full) then replays it.

        On CUDA this is one ``torch.cuda.CUDAGraph`` (warmed up on a side stream). On CPU it is
        a dispatch recording (:class:`derivgraph.runtime.replay.CpuPass`) that replays the same
        aten ops over the storages they had at capture, as a CUDA graph does, so tests prove a
        recorded pass is bit-exact with fixed storage. The plan keeps every storage the
        recording reads alive. Selective runs and :meth:`refill` stay eager: they read holders
        the engine just rebuilt, which a recording cannot know. A source whose object or address
        changed makes :meth:`run` fall back to eager and drop the recording (recapture required).
        Where :attr:`overlap_checks` holds (default: on CUDA) a full :meth:`run` launches the
        replay first and runs its host checks while the device works; a failed check waits for
        the replay, then runs eagerly (or refuses) exactly as without the overlap.
        """
        assert self.program is not None
        if self.programs.flat and ".index_copy_(" in self.program.source:
            self._install_recordable()
        fn = self.program.fn
        writes = WriteRecorder()
        with torch.no_grad():
            if self._on_cuda():
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream), writes:
                    fn()
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    fn()
                self._recording = graph
                self._keep = storages_read(fn.__globals__.values())
            else:
                with writes:
                    fn()
                self._recording = CpuPass(fn)
                # and the storages a flat group addresses by memory (compiler.flat)
                self._keep = self._recording.storages() + storages_read(
                    fn.__globals__.values())
        self._refuse_source_writes(writes.written)
        self._captured = True
        self.prepare()  # the entry functions of the captured plan

    def _install_recordable(self) -> None:
        """The pass with one ``torch._foreach_*`` call per operation, for a recording: a flat
        group (:mod:`derivgraph.compiler.flat`) writes through one view over the memory of
        many storages, which the write check cannot split into the storages written."""
        self.programs.flat = False
        self.install(self.programs.lowered, group=self._grouped)

    def _refuse_source_writes(self, written: set[int]) -> None:
        """A recording that writes a source is refused: :meth:`run` replays before its checks
        and relies on every source being read only."""
        hit = [path for path, t in self.tensors.sources.items() if isinstance(t, torch.Tensor)
               and not t.is_meta and t.untyped_storage().data_ptr() in written]
        if hit:
            self._recording, self._keep = None, []
            raise PassFault(f"the reload pass writes the source(s) {', '.join(hit)}: it must "
                            "only read sources; nothing was captured", hit)

    @property
    def captured(self) -> bool:
        return self._captured

    def _on_cuda(self) -> bool:
        """Whether any bound tensor lives on a CUDA device (computed once). During the
        compile (the layout book is set), an entry column whose storages the book holds under
        one record of a plain class (``torch.Tensor``, ``nn.Parameter``: their ``is_cuda`` is
        their device's) answers by the record's device; every other entry's storage is read
        (one sweep each: the generic entries and the columns without such a record)."""
        if self._cuda is None:
            book, entries = self.tensors.layouts, self.entries
            recorded = False  # a recorded column on CUDA
            storages = list(map(_STORAGE, entries.generic.values()))
            for column in entries.columns:
                record = None if book is None else book.common(column.storages)
                if record is not None and record.type in _PLAIN:
                    recorded = recorded or record.device.type == "cuda"
                else:
                    storages += column.storages
            tensors = compress(storages, map(isinstance, storages, repeat(torch.Tensor)))
            self._cuda = recorded or any(map(_IS_CUDA, tensors))
        return self._cuda

    # ---- sources that changed, and holders -----------------------------------------------
    def _sources_changed(self, report: RunReport, strict: bool) -> None:
        changed, moved = self.holders.changed_sources(self.graph)
        if changed and (strict or self.relayout is None):
            raise SourceChanged("sources changed shape or dtype on reload", changed)
        if changed:
            for node_id in self.relayout(self, changed):  # re-infer, re-allocate, re-lower
                report.reallocated.append(node_id)
                report.recapture_required.append(f"{node_id} (moved: graph recapture required)")
        else:
            self._bind_all()  # re-resolve the sources that moved; the recording is stale
        report.recapture_required += [f"{p} (moved: graph recapture required)" for p in moved]

    def rebind(self, report: RunReport | None = None) -> int:
        """Point every holder back at the startup object; returns how many were re-bound.

        Cheap when nothing was rebuilt: one identity check per path hop and per holder. When
        only some holders changed, only those are re-bound; when an owner on the way was
        rebuilt, the paths are walked again (once, sharing prefixes).
        """
        restored = self.restore_containers() if self.containers else 0
        return restored + self.holders.rebind(report)

    def restore_containers(self) -> int:
        """Put every tuple holding derived tensors back at its slot
        (:mod:`derivgraph.runtime.containers`)."""
        return restore_containers(self.model, self.containers) if self.containers else 0
