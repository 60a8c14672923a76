"""The compiled plan at run time: the in-place reload pass, capture, and holder re-binding.

:meth:`Plan.run` is the reload pass: generated Python (:mod:`derivgraph.compiler.lower`) that
writes into
the startup storage through ``torch._foreach_*`` and ``out=`` calls over tensors bound at
compile, then re-binds every holder the engine rebuilt. :meth:`Plan.capture` records the pass
into one CUDA graph (on CPU: a dispatch recording) that :meth:`Plan.run` replays. No step
synchronizes with the host and no step allocates a tensor a captured graph can see.

Faults: the pass never writes a source, and every derived tensor it writes is a pure function of
the sources (never of its own previous value). An op that raises mid-pass therefore leaves every
source untouched and some derived tensors half-written; :class:`PassFault` names the node and
its owner, and any later full run rewrites every derived tensor from the sources, bit-exact. The
same holds when the pass is interrupted for any other reason (``KeyboardInterrupt``, a killed
worker thread): nothing outside the derived storage was written and holders are re-bound only
after the pass, so a rerun fixes everything. (A killed *process* takes the model with it.)
Plans are made by :func:`derivgraph.planner.compile_plan`.
"""

from __future__ import annotations

import fnmatch
import logging
import operator
import time
import types
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from derivgraph.compiler.engine import check_refillable, refuse_recompute
from derivgraph.compiler.fold import FoldSet
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, NodeRef, refs_in
from derivgraph.compiler.interpret import EagerInterpreter, view_base
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.lower import Action, Program, Step, build_program
from derivgraph.errors import PassFault, SourceChanged
from derivgraph.ops import OPS
from derivgraph.paths import MISSING, Slot, get_path, holder_dict, set_slot, slot_of, step_into
from derivgraph.runtime.containers import ContainerHolder, restore_containers
from derivgraph.runtime.report import RunReport
from derivgraph.spec.kinds import HELD_KINDS, TENSOR_KINDS, TensorKind, is_engine

__all__ = ["TENSOR_KINDS", "Entry", "PassFault", "Plan", "SourceChanged", "Step", "address_of"]

logger = logging.getLogger(__name__)

_is = operator.is_
_data_ptr = torch.Tensor.data_ptr


class Entry:
    """A derived tensor bound to its owner, with the storage it keeps for life."""

    __slots__ = ("node", "storage", "slot", "adopted", "startup_ptr", "startup_data")

    def __init__(self, node: DerivedNode, storage: Any, slot: Slot | str, adopted: bool):
        self.node = node
        self.storage = storage
        self.slot = Slot(slot)
        self.adopted = adopted
        self.startup_ptr = 0
        self.startup_data: Any = None  # a detached alias of the startup storage

    @property
    def id(self) -> str:
        return self.node.id

    def nbytes(self) -> int:
        s = self.storage
        return s.numel() * s.element_size() if isinstance(s, torch.Tensor) else 0


def address_of(t: Any) -> int:
    """A tensor's data pointer (what a captured graph bakes in); 0 for meta and non-tensors."""
    return t.data_ptr() if isinstance(t, torch.Tensor) and t.device.type != "meta" else 0


class _Hops:
    """Identity checks for a set of paths: one C-level ``all(map(is_, ...))`` per run."""

    def __init__(self, root: Any, paths: Iterable[str]):
        self.ok = True
        dicts, keys, expected = [], [], []
        self.slow: list[tuple[Any, str, Any]] = []
        seen: dict[str, Any] = {"": root}
        for path in paths:
            parts = path.split(".") if path else []
            for i in range(len(parts)):
                prefix = ".".join(parts[: i + 1])
                if prefix in seen:
                    continue
                parent = seen[".".join(parts[:i])]
                if parent is MISSING or parent is None:
                    seen[prefix] = MISSING
                    continue
                child = step_into(parent, parts[i])
                seen[prefix] = child
                where = holder_dict(parent, parts[i])
                if where is None:
                    self.slow.append((parent, parts[i], child))
                else:
                    dicts.append(where[0])
                    keys.append(where[1])
                    expected.append(child)
        self.objects = seen
        self._dicts, self._keys, self._expected = dicts, keys, expected

    def intact(self) -> bool:
        if not all(map(_is, map(dict.get, self._dicts, self._keys), self._expected)):
            return False
        return all(step_into(p, k) is c for p, k, c in self.slow)


class Plan:
    """The compiled, bound derived-tensor plan of one model."""

    def __init__(self, model: nn.Module, graph: DerivedGraph):
        self.model = model
        self.graph = graph
        self.entries: dict[str, Entry] = {}
        self.steps: list[Step] = []
        self.source_ptrs: dict[str, tuple[int, int]] = {}
        self.strict = True
        self.meta_env: dict[str, Any] = {}
        self.out_views: dict[str, tuple[int, ...]] = {}
        self.bindings: dict[str, Any] = {}
        self.program: Program | None = None
        self._programs: dict[frozenset[str], Program] = {}
        self._selective: dict[tuple[str, ...], frozenset[str]] = {}
        self._names: dict[str, str] = {}
        self._views: dict[str, torch.Tensor] = {}
        self._stages: dict[str, torch.Tensor] = {}
        self.constant_entries: list[str] = []  # derived tensors no source feeds
        self.constant_values: dict[str, torch.Tensor] = {}  # their values, made at compile
        self._constants_from_engine = False  # a refill wrote engine values into constants
        self.constants: dict[str, torch.Tensor] = {}  # op nodes no source feeds: made at compile
        self._sources: dict[str, torch.Tensor] = {}
        self._src_list: list[tuple[str, Any, torch.Tensor, int]] = []
        self._hops: _Hops | None = None
        self._holder_checks: tuple[list[Any], list[str], list[Any]] = ([], [], [])
        self._holder_entries: list[Entry] = []
        self._src_checks: tuple[list[Any], list[str], list[Any], list[int]] | None = None
        self._startup: tuple[list[Any], list[int]] | None = None
        self._graph: Any = None
        self.folds = FoldSet()  # fold hook: set by compile_plan
        # tuples kept for life (derivgraph.runtime.containers)
        self.containers: list[ContainerHolder] = []
        self._cuda: bool | None = None
        self._captured = False

    # ---- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.entries)

    def declared(self) -> dict[str, Any]:
        """Model path -> the startup object of every declared derived tensor."""
        return {k: e.storage for k, e in self.entries.items()}

    def not_refillable(self) -> list[str]:
        """Derived Python scalars: a captured graph baked their value; only recapture helps."""
        return [k for k, e in self.entries.items() if e.node.kind is TensorKind.SCALAR]

    def rows(self) -> list[dict[str, Any]]:
        """One row per derived tensor: node, owner, kind, shape, dtype, bytes, op, spec."""
        rows = []
        for key, e in self.entries.items():
            node = e.node
            s = e.storage
            producer = "-"
            if node.kind is TensorKind.ALIAS:
                producer = f"alias of {node.input}"
            elif node.kind is TensorKind.VIEW:
                producer = f"view of {node.input}"
            elif node.input is None and is_engine(node.decl):  # engine hook
                producer = "engine-computed"
            elif node.input is not None:
                data = self.graph.nodes[node.input]
                producer = data.op if data.kind is NodeKind.OP else f"copy {node.input}"
            rows.append({
                "node": key,
                "owner": node.owner_path or "<model>",
                "kind": node.kind.value,
                "shape": list(s.shape) if isinstance(s, torch.Tensor) else [],
                "dtype": str(s.dtype).removeprefix("torch.") if isinstance(s, torch.Tensor)
                else type(s).__name__,
                "bytes": e.nbytes() if node.kind in HELD_KINDS else 0,
                "op": producer,
                "adopted": e.adopted,
                "spec": node.bound.spec.name,
                "location": str(node.decl.location),
            })
        return rows

    def source(self) -> str:
        """The reload pass as Python: exactly the code :meth:`run` executes.

        A header lists what each bound name holds; the function body is the generated source
        that was ``exec``'d (``torch`` is torch, ``ops`` the op registry).
        """
        assert self.program is not None
        lines = ["# Generated by derivgraph: the in-place reload pass (the code that runs).",
                 "# Bound at compile (re-resolved only when a holder is rebuilt):"]
        for key, name in self._names.items():
            if key.startswith("list:"):
                refs = [r.removeprefix("out:") for r in key[5:].split("|")]
                lines.append(f"#   {name} = [{', '.join(refs)}]")
                continue
            if key.startswith(("out:", "const:")):
                continue
            entry = self.entries.get(key)
            if entry is not None:
                what = f"{entry.node.kind}, {entry.node.bound.spec.name} " \
                       f"({entry.node.decl.location})"
            elif key.startswith("stage:"):
                what = "staging tensor of a derived Python scalar"
            else:
                what = "source" if key in self._sources else "view over a bound tensor"
            lines.append(f"#   {name} = {key}  # {what}")
        for key, fold in self.folds.entries.items():  # fold hook: applied eagerly, first
            lines.append(f"# Before the pass: fold {key} = {fold.decl.formula} in place, once "
                         "per load (the only write to a source)")
        for key, entry in self.entries.items():  # engine hook
            if entry.node.input is None and is_engine(entry.node.decl):
                lines.append(f"# Not in the pass: {key} is engine-computed (refill() copies the "
                             "engine's fresh value; run() refuses it)")
        lines.append("# After the pass: derived scalars are set from their stage tensors and every "
                     "rebuilt holder is re-pointed at its startup storage.")
        return "\n".join(lines) + "\n" + self.program.source

    # ---- bindings used by the lowering ------------------------------------------------------
    def _name_for(self, key: str, hint: str, value: Any) -> str:
        name = self._names.get(key)
        if name is None:
            base = "".join(c if c.isalnum() else "_" for c in hint).strip("_") or "v"
            if base[0].isdigit():
                base = "_" + base
            name, n = base, 1
            while name in self.bindings:
                n += 1
                name = f"{base}_{n}"
            self._names[key] = name
        self.bindings[name] = value
        return name

    def bound_value(self, ref: str) -> Any:
        if ref.startswith("out:"):
            return self.out_tensor(ref[4:])
        if ref in self._sources:
            return self._sources[ref]
        if ref in self.entries:
            return self.entries[ref].storage
        if ref in self._views:
            return self._views[ref]
        if ref in self._stages:
            return self._stages[ref]
        if ref in self.constants:
            return self.constants[ref]
        raise KeyError(ref)

    def is_bound(self, ref: str) -> bool:
        try:
            self.bound_value(ref)
        except KeyError:
            return False
        return True

    def bound_name(self, ref: str) -> str:
        value = self.bound_value(ref)
        if ref in self._sources:
            hint = "src_" + ref
        elif ref in self._views:
            hint = "view_" + ref.split(":")[0].lstrip("%")
        else:
            hint = ref
        return self._name_for(ref, hint, value)

    def out_tensor(self, target: str) -> torch.Tensor:
        storage = self.entries[target].storage
        shape = self.out_views.get(target)
        return storage if shape is None else storage.view(shape)

    def out_name(self, target: str) -> str:
        if target not in self.out_views:
            return self.bound_name(target)
        return self._name_for("out:" + target, target + "_out", self.out_tensor(target))

    def out_ref(self, target: str) -> str:
        return "out:" + target if target in self.out_views else target

    def stage_name(self, target: str) -> str:
        return self._name_for("stage:" + target, target + "_stage", self._stages[target])

    def constant_name(self, value: Any) -> str:
        key = f"const:{len(self.bindings)}"
        return self._name_for(key, "const", value)

    def list_name(self, refs: list[str]) -> str:
        """A prebuilt list of bound tensors (a global of the generated code)."""
        key = "list:" + "|".join(refs)
        value = [self.bound_value(r) for r in refs]
        return self._name_for(key, f"group{len(self.bindings)}", value)

    def bound_view(self, node_id: str) -> torch.Tensor | None:
        return self._views.get(node_id)

    def meta_of(self, ref: Any) -> Any:
        ref_id = ref.id if isinstance(ref, NodeRef) else ref
        if not isinstance(ref_id, str):
            return None
        meta = self.meta_env.get(ref_id)
        return meta if isinstance(meta, torch.Tensor) else None

    def _ptrs(self, ref: str) -> set[int]:
        try:
            value = self.bound_value(ref)
        except KeyError:
            return set()
        if isinstance(value, torch.Tensor) and value.device.type != "meta":
            return {value.untyped_storage().data_ptr()}
        return set()

    def step_reads(self, step: Step) -> set[int]:
        refs = refs_in(step.args) + refs_in(step.kwargs) + ([step.input] if step.input else [])
        out: set[int] = set()
        for ref in refs:
            out |= self._ptrs(ref)
        return out

    def step_writes(self, step: Step) -> set[int]:
        if step.action is Action.COMPUTE:
            return set()
        if step.action is Action.SCALAR:
            return self._ptrs("stage:" + step.target) if False else set()
        return self._ptrs(step.target)

    def reads_storage_of(self, node_id: str, out: torch.Tensor) -> bool:
        """True if an argument of op ``node_id`` is (a view of) ``out``'s storage.

        Writing ``out=`` into a tensor the op also reads is undefined (torch refuses overlapping
        memory), so such a step computes into a temporary and copies instead.
        """
        target = out.untyped_storage().data_ptr()
        for ref in refs_in(self.graph.nodes[node_id].args):
            node = self.graph.nodes[ref]
            while node.kind is NodeKind.OP and OPS[node.op].kind == "view":
                node = self.graph.nodes[node.inputs[0]]
            if node.kind is NodeKind.OP:
                continue
            if target in self._ptrs(node.id):
                return True
        return False

    # ---- binding everything once ----------------------------------------------------------
    def _bind_all(self) -> None:
        """Resolve sources and views over bound tensors; (re)build the pass programs."""
        self._bind_tensors()
        self._build_programs()

    def _bind_tensors(self) -> None:
        """Resolve sources, views over bound tensors, and the holder checks (no code)."""
        model = self.model
        self._sources = {}
        self._src_list = []
        self._src_checks = None
        self._startup = None
        for src in self.graph.sources():
            tensor = get_path(model, src)
            self._sources[src] = tensor
        self._views = {}
        nodes = self.graph.nodes
        for node_id in self.graph.ordered():
            node = nodes[node_id]
            if node.kind is not NodeKind.OP or OPS[node.op].kind != "view" \
                    or len(refs_in(node.args)) != 1:
                continue
            base = node.inputs[0]
            if base in self._views or base in self._sources or base in self.constants or (
                    base in self.entries and isinstance(self.entries[base].storage, torch.Tensor)):
                inner = self.bound_value(base)
                args = tuple(inner if isinstance(a, NodeRef) else a for a in node.args)
                self._views[node_id] = OPS[node.op].fn(*args, **node.kwargs)
        self._hops = _Hops(model, [s.rpartition(".")[0] for s in self._sources]
                           + [e.node.owner_path for e in self.entries.values()])
        objs = self._hops.objects
        for src, tensor in self._sources.items():
            owner_path, _, name = src.rpartition(".")
            owner = objs.get(owner_path, MISSING) if owner_path else model
            where = holder_dict(owner, name) if owner is not MISSING else None
            self._src_list.append((src, where, tensor, address_of(tensor)))
        self._refresh_holder_checks()

    def _build_programs(self) -> None:
        self.bindings.clear()
        self.bindings.update(torch=torch, ops=types.SimpleNamespace(**OPS))
        self._names = {}
        self._programs = {}
        self.program = build_program(self, self.steps, "reload_pass")
        self._graph = None
        self._captured = False

    def _refresh_holder_checks(self) -> None:
        self._holder_entries = [e for e in self.entries.values()  # tuple items: the tuple's hop
                                if e.node.kind is not TensorKind.SCALAR
                                and e.slot is not Slot.ELEMENT]
        dicts, keys, expected = [], [], []
        for entry in self._holder_entries:
            d, k = self._holder_where(entry)
            dicts.append(d)
            keys.append(k)
            expected.append(entry.storage)
        self._holder_checks = (dicts, keys, expected)

    def _holder_where(self, entry: Entry) -> tuple[Any, str]:
        objs = self._hops.objects if self._hops else {}
        path = entry.node.owner_path
        owner = objs.get(path, MISSING) if path else self.model
        where = holder_dict(owner, entry.node.decl.name) \
            if owner is not MISSING and owner is not None else None
        return where if where is not None else ({}, entry.node.decl.name)

    def _sources_intact(self) -> bool:
        """One C-level identity sweep and one address sweep over every source."""
        checks = self._src_checks
        if checks is None:
            if any(where is None for _s, where, _t, _p in self._src_list):
                return False
            rows = self._src_list
            checks = self._src_checks = ([w[0] for _s, w, _t, _p in rows],
                                         [w[1] for _s, w, _t, _p in rows],
                                         [t for _s, _w, t, _p in rows],
                                         [p for _s, _w, _t, p in rows])
        dicts, keys, tensors, ptrs = checks
        return all(map(_is, map(dict.get, dicts, keys), tensors)) and \
            list(map(_data_ptr, tensors)) == ptrs

    def _holders_intact(self) -> bool:
        dicts, keys, expected = self._holder_checks
        return (self._hops is not None and self._hops.intact()
                and all(map(_is, map(dict.get, dicts, keys), expected)))

    # ---- running --------------------------------------------------------------------------
    def _needed_nodes(self, updated: Iterable[str]) -> frozenset[str]:
        names = tuple(updated)
        cached = self._selective.get(names)
        if cached is not None:
            return cached
        hit = {s for s in self.source_ptrs for n in names
               if s == n or s.startswith(n + ".") or fnmatch.fnmatchcase(s, n)}
        deps = self.graph.source_deps()
        dirty = {n for n, d in deps.items() if d & hit} if hit else set()
        # an intermediate a dirty step reads is not kept between runs: recompute it too, even
        # when no updated source feeds it (derived tensors and constants keep their values)
        nodes = self.graph.nodes
        stack = list(dirty)
        while stack:
            for ref in nodes[stack.pop()].inputs:
                if ref not in dirty and nodes[ref].kind is NodeKind.OP \
                        and ref not in self.constants:
                    dirty.add(ref)
                    stack.append(ref)
        needed = frozenset(dirty)
        self._selective[names] = needed
        return needed

    def _program_for(self, nodes: frozenset[str]) -> Program:
        prog = self._programs.get(nodes)
        if prog is None:
            steps = [s for s in self.steps if s.node in nodes or s.target in nodes]
            prog = build_program(self, steps, f"partial_pass_{len(self._programs)}")
            self._programs[nodes] = prog
        return prog

    def run(self, updated: Iterable[str] | None = None, *, verify: bool = False,
            take_engine_values: bool = False, strict: bool | None = None) -> RunReport:
        """Recompute derived tensors into their startup storage, then re-bind holders.

        ``updated``: source paths (exact, prefix or glob) that changed; only their dirty cone is
        recomputed (every holder the engine rebuilt is re-bound). ``None`` recomputes everything
        (a replay when :meth:`capture` d). ``take_engine_values``: where the engine's post-load
        step left a new tensor at a holder (same shape and dtype), copy its value instead of
        recomputing (the layerwise-reload refill). ``verify`` checks that no bound tensor or
        source changed object or address. ``strict`` (default: the plan's ``strict``) refuses a
        source whose shape or dtype changed; otherwise the affected derived tensors are
        re-allocated and reported (graph recapture required).
        """
        updated = None if updated is None else list(updated)
        if not take_engine_values:  # engine hook: refuse before anything is written
            refuse_recompute(self, updated)
        report = RunReport(mode="refill" if take_engine_values else "recompute")
        start = time.perf_counter()
        if not self._sources_intact():
            self._sources_changed(report, self.strict if strict is None else strict)
        with torch.no_grad():
            report.restored = self._restore_storage()
            self.folds.apply(self.model, updated, report)  # fold hook: before derived, eagerly
            if not take_engine_values and self._constants_from_engine:
                self.rewrite_constants(report)
            if take_engine_values:
                self._refill(report)
            elif updated is None:
                if self._captured and self._graph is not None:
                    self._graph.replay()
                    report.replayed = True
                    self._count(report, self.program)
                else:
                    self._execute(self.program, report)
            else:
                self._execute(self._program_for(self._needed_nodes(updated)), report)
            self._set_scalars(report, None if updated is None
                              else self._needed_nodes(updated))
        # every holder the engine rebuilt, in the cone or not: outside it the startup storage
        # still holds the right values (its sources did not change)
        report.rebinds = self.rebind(report)
        report.seconds = time.perf_counter() - start
        if verify:
            report.moved = self.moved()
        return report

    def _count(self, report: RunReport, prog: Program) -> None:
        for step in prog.steps:
            report.steps += 1
            if step.action in (Action.OUT, Action.COPY):
                report.written += 1
                report.bytes += self.entries[step.target].nbytes()

    def _execute(self, prog: Program, report: RunReport) -> None:
        try:
            prog.fn()
        except Exception as exc:  # re-raised as a PassFault that names the node
            raise self._fault(prog, exc) from exc
        self._count(report, prog)

    def _fault(self, prog: Program, exc: Exception) -> PassFault:
        tb = exc.__traceback__
        nodes: tuple[str, ...] = ()
        filename = prog.fn.__code__.co_filename
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                nodes = prog.line_nodes.get(tb.tb_lineno, ())
            tb = tb.tb_next
        described = []
        for n in nodes:
            entry = self.entries.get(n)
            if entry is not None:
                described.append(f"{n} (owner {entry.node.owner_path or '<model>'}, spec "
                                 f"{entry.node.bound.spec.name} at {entry.node.decl.location})")
            else:
                users = [u for u in self.graph.ir.users.get(n, []) if u in self.entries]
                described.append(f"{n} (feeding {', '.join(users) or 'derived tensors'})")
        where = "; ".join(described) or "an unknown step"
        return PassFault(f"the reload pass failed at {where}: {type(exc).__name__}: {exc}. "
                         "No source was written; run the pass again once the cause is fixed "
                         "(it rewrites every derived tensor from the sources)", list(nodes))

    def _set_scalars(self, report: RunReport, nodes: frozenset[str] | None) -> None:
        for target, stage in self._stages.items():
            if nodes is not None and target not in nodes:
                continue
            entry = self.entries[target]
            new = float(stage.item()) if entry.storage.__class__ is float else stage.item()
            if new != entry.storage and not (new != new and entry.storage != entry.storage):
                report.recapture_required.append(target)
                entry.storage = new
                self._rebind_entries([entry], report)

    def _refill(self, report: RunReport) -> None:
        ours, theirs, taken = [], [], set()
        self._hops = self._walk()  # the engine rebuilt holders: walk once, rebind reuses it
        self._refresh_holder_checks()
        owners = self._hops.objects
        targets = [s.target for s in self.steps if s.action in (Action.OUT, Action.COPY)]
        engine = [n for n, e in self.entries.items()  # engine hook: no step makes these
                  if e.node.input is None and is_engine(e.node.decl)]
        for target in targets + self.constant_entries + engine:  # the engine's values, all kept
            entry = self.entries[target]
            fresh = self._engine_value(entry, owners)
            if fresh is None and target in engine:
                check_refillable(self, entry)  # raises before any copy if the layout changed
            if fresh is not None:
                ours.append(entry.storage)
                theirs.append(fresh)
                taken.add(target)
                report.bytes += entry.nbytes()
        if ours:
            torch._foreach_copy_(ours, theirs)
        self._constants_from_engine |= any(n in taken for n in self.constant_entries)
        report.taken_from_engine = report.written = report.steps = len(ours)
        rest = frozenset(n for s in self.steps for n in (s.node, s.target)
                         if n and s.target not in taken) if taken else None
        if rest is None:
            self._execute(self.program, report)
        elif rest:
            self._execute(self._program_for(rest), report)

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
                torch._foreach_copy_([self.entries[n].storage for n in keys],
                                     [self.constant_values[n] for n in keys])
        if report is not None:
            report.written += len(keys)
        self._constants_from_engine = False
        return len(keys)

    def _restore_storage(self) -> list[str]:
        """Put startup storage back under tensors the engine re-pointed (``t.data = new``)."""
        held = self._startup
        if held is None:
            held = self._startup = (
                [e.storage for e in self.entries.values() if e.startup_data is not None],
                [e.startup_ptr for e in self.entries.values() if e.startup_data is not None])
        if list(map(_data_ptr, held[0])) == held[1]:
            return []
        restored = []
        for key, entry in self.entries.items():
            if entry.startup_data is None or entry.storage.data_ptr() == entry.startup_ptr:
                continue
            entry.storage.data = entry.startup_data
            restored.append(key)
        return restored

    def refill(self, *, verify: bool = False) -> RunReport:
        """After an engine reran its post-load step: keep its values, restore our storage."""
        return self.run(None, verify=verify, take_engine_values=True)

    def _on_cuda(self) -> bool:
        """Whether any bound tensor lives on a CUDA device (computed once)."""
        if self._cuda is None:
            self._cuda = any(isinstance(e.storage, torch.Tensor) and e.storage.is_cuda
                             for e in self.entries.values())
        return self._cuda

    def _engine_value(self, entry: Entry, owners: dict[str, Any] | None = None) \
            -> torch.Tensor | None:
        path = entry.node.owner_path
        owner = owners.get(path, MISSING) if owners is not None and path else MISSING
        if owner is MISSING:
            owner = get_path(self.model, path)
        if owner is MISSING or owner is None:
            return None
        current = step_into(owner, entry.node.decl.name)
        if (isinstance(current, torch.Tensor) and current is not entry.storage
                and current.shape == entry.storage.shape and current.dtype == entry.storage.dtype
                and current.device.type != "meta"):
            return current
        return None

    # ---- capture ----------------------------------------------------------------------------
    def capture(self) -> None:
        """Record the full recompute pass once; :meth:`run` (full) then replays it.

        On CUDA this is one ``torch.cuda.CUDAGraph`` (warmed up on a side stream). On CPU it is
        a dispatch recording (:class:`derivgraph.runtime.replay.CpuGraph`) that replays the same
        aten
        ops over the same tensor objects, so tests prove a recorded pass is bit-exact with fixed
        storage. Selective runs and :meth:`refill` stay eager: they read holders the engine just
        rebuilt, which a recording cannot know. A source whose object or address changed makes
        :meth:`run` fall back to eager and drop the recording (recapture required).
        """
        assert self.program is not None
        fn = self.program.fn
        with torch.no_grad():
            if self._on_cuda():
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    fn()
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    fn()
                self._graph = graph
            else:
                self._graph = _CpuPass(fn)
        self._captured = True

    @property
    def captured(self) -> bool:
        return self._captured

    # ---- faults ---------------------------------------------------------------------------
    def _sources_changed(self, report: RunReport, strict: bool) -> None:
        changed, moved = [], []
        for src, _where, tensor, ptr in self._src_list:
            current = get_path(self.model, src)
            if current is MISSING or not isinstance(current, torch.Tensor):
                raise SourceChanged("sources are gone from the model", [src])
            node = self.graph.nodes[src]
            if tuple(current.shape) != node.shape or current.dtype != node.dtype:
                changed.append(src)
            elif current is not tensor or current.data_ptr() != ptr:
                moved.append(src)
        if changed and strict:
            raise SourceChanged("sources changed shape or dtype on reload", changed)
        if changed:
            self._reallocate(changed, report)
        else:
            self._bind_all()  # re-resolve the sources that moved; the recording is stale
        report.recapture_required += [f"{p} (moved: graph recapture required)" for p in moved]

    def _reallocate(self, changed: list[str], report: RunReport) -> None:
        """Permissive mode: re-infer and re-allocate every derived tensor that changed layout."""
        from derivgraph.planner import refresh_layouts

        for node_id in refresh_layouts(self, changed):
            report.reallocated.append(node_id)
            report.recapture_required.append(f"{node_id} (moved: graph recapture required)")

    def rebind(self, report: RunReport | None = None) -> int:
        """Point every holder back at the startup object; returns how many were re-bound.

        Cheap when nothing was rebuilt: one identity check per path hop and per holder. When
        only some holders changed, only those are re-bound; when an owner on the way was
        rebuilt, the paths are walked again (once, sharing prefixes).
        """
        count = self.restore_containers()
        if self._hops is not None and self._hops.intact():
            dicts, keys, expected = self._holder_checks
            oks = list(map(_is, map(dict.get, dicts, keys), expected))
            if all(oks):
                return count
            bad = [i for i, ok in enumerate(oks) if not ok]
            count += self._rebind_entries([self._holder_entries[i] for i in bad], report,
                                         self._hops.objects)
            for i in bad:
                dicts[i], keys[i] = self._holder_where(self._holder_entries[i])
            count += self._rebind_entries([e for e in self.entries.values()
                                           if e.node.kind is TensorKind.SCALAR], report,
                                          self._hops.objects)
            return count
        self._hops = self._walk()
        count += self._rebind_entries(self.entries.values(), report, self._hops.objects)
        self._refresh_holder_checks()
        return count

    def restore_containers(self) -> int:
        """Put every tuple holding derived tensors back at its slot
        (:mod:`derivgraph.runtime.containers`)."""
        return restore_containers(self.model, self.containers) if self.containers else 0

    def _walk(self) -> _Hops:
        return _Hops(self.model, [s.rpartition(".")[0] for s in self._sources]
                     + [e.node.owner_path for e in self.entries.values()])

    def _rebind_entries(self, entries: Iterable[Entry], report: RunReport | None,
                        known: dict[str, Any] | None = None) -> int:
        count = 0
        owners: dict[str, Any] = dict(known) if known else {}
        owners[""] = self.model
        for entry in entries:
            path = entry.node.owner_path
            owner = owners[path] if path in owners else owners.setdefault(
                path, get_path(self.model, path))
            if owner is MISSING or owner is None:
                if report is not None:
                    report.missing_owners.append(entry.id)
                continue
            name = entry.node.decl.name
            current = get_path(owner, name)
            if entry.node.kind is TensorKind.SCALAR:
                if current != entry.storage:
                    set_slot(owner, name, entry.storage, Slot.ATTRIBUTE)
                    count += 1
                continue
            if current is entry.storage and slot_of(owner, name) == entry.slot:
                continue
            if entry.slot is Slot.ELEMENT:  # the startup tuple was not put back: its parent
                if report is not None:      # is gone (restore_containers)
                    report.missing_owners.append(entry.id)
                continue
            set_slot(owner, name, entry.storage, entry.slot, entry.node.decl.persistent)
            count += 1
        return count

    def moved(self) -> list[str]:
        """Bound tensors or sources whose holder now has another object or address."""
        moved = []
        for key, entry in self.entries.items():
            if entry.node.kind is TensorKind.SCALAR:
                continue
            current = get_path(self.model, key)
            if current is not entry.storage or address_of(current) != entry.startup_ptr:
                moved.append(key)
        for path, (obj_id, ptr) in self.source_ptrs.items():
            current = get_path(self.model, path)
            if id(current) != obj_id or address_of(current) != ptr:
                moved.append(path)
        return moved

    def evaluate(self) -> dict[str, Any]:
        """Every node's value computed eagerly, one op at a time (the reference for tests)."""
        with torch.no_grad():
            return EagerInterpreter(self.graph).run()

    def view_base(self, node_id: str) -> str:
        return view_base(self.graph, node_id)


class _CpuPass:
    """A CPU recording of the pass (aten ops over fixed tensor objects), replayed as is."""

    def __init__(self, fn: Any):
        from derivgraph.runtime.replay import CpuGraph

        recorder = CpuGraph()
        with torch.no_grad(), recorder:
            fn()
        recorder.drop_capture_refs()
        self._recorder = recorder

    def replay(self) -> None:
        self._recorder.replay_slots()


