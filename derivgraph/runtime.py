"""The compiled plan at run time: the in-place reload pass and holder re-binding.

:meth:`Plan.run` is the reload pass: topologically ordered steps that write into the startup
storage (``out=`` where the op has one, else compute and ``copy_``), then re-bind every holder
the engine rebuilt. No step allocates a tensor a captured graph can see. Plans are made by
:func:`derivgraph.plan.compile_plan`.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
from torch import nn

from .dag import DerivedGraph, DerivedNode, substitute
from .engine_values import check_refillable, is_engine, refuse_recompute
from .fold import FoldSet
from .ops import OPS
from .paths import MISSING, get_path, set_slot, slot_of
from .report import RunReport

__all__ = ["TENSOR_KINDS", "Entry", "Plan", "Step", "address_of"]

logger = logging.getLogger(__name__)

TENSOR_KINDS = ("parameter", "buffer", "attribute", "engine")  # engine hook: "engine"


@dataclass
class Step:
    """One instruction of the reload pass.

    ``action`` is ``compute`` (an intermediate), ``out`` (an op writing straight into a
    derived tensor), ``copy`` (``copy_`` a value into a derived tensor), ``scalar``
    (a Python number: set, and flagged for graph recapture when it changes) or ``engine``
    (an engine-computed tensor: only a refill can fill it, from the engine's fresh value).
    """

    node: str
    action: str
    op: str | None = None
    args: Any = ()
    kwargs: Any = field(default_factory=dict)
    input: str | None = None


@dataclass
class Entry:
    """A derived tensor bound to its owner, with the storage it keeps for life."""

    node: DerivedNode
    storage: Any
    slot: str
    adopted: bool
    startup_ptr: int = 0
    startup_data: Any = None  # a detached alias of the startup storage (restores `.data` rebinds)

    @property
    def id(self) -> str:
        return self.node.id

    def nbytes(self) -> int:
        s = self.storage
        return s.numel() * s.element_size() if isinstance(s, torch.Tensor) else 0


def address_of(t: Any) -> int:
    """A tensor's data pointer (what a captured graph bakes in); 0 for meta and non-tensors."""
    return t.data_ptr() if isinstance(t, torch.Tensor) and t.device.type != "meta" else 0


class Plan:
    """The compiled, bound derived-tensor plan of one model."""

    def __init__(self, model: nn.Module, graph: DerivedGraph):
        self.model = model
        self.graph = graph
        self.entries: dict[str, Entry] = {}
        self.steps: list[Step] = []
        self.source_ptrs: dict[str, tuple[int, int]] = {}
        self.folds = FoldSet()  # fold hook: set by compile_plan
        self._cuda: bool | None = None

    # ---- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.entries)

    def declared(self) -> dict[str, Any]:
        """Model path -> the startup object of every declared derived tensor."""
        return {k: e.storage for k, e in self.entries.items()}

    def not_refillable(self) -> list[str]:
        """Derived Python scalars: a captured graph baked their value; only recapture helps."""
        return [k for k, e in self.entries.items() if e.node.kind == "scalar"]

    def rows(self) -> list[dict[str, Any]]:
        """One row per derived tensor: node, owner, kind, shape, dtype, bytes, op, spec."""
        rows = []
        for key, e in self.entries.items():
            node = e.node
            s = e.storage
            producer = "-"
            if node.kind == "alias":
                producer = f"alias of {node.input}"
            elif node.kind == "view":
                producer = f"view of {node.input}"
            elif node.input is None and is_engine(node.decl):  # engine hook
                producer = "engine-computed"
            elif node.input is not None:
                data = self.graph.g.nodes[node.input]
                producer = data["op"] if data["kind"] == "op" else f"copy {node.input}"
            rows.append({
                "node": key,
                "owner": node.owner_path or "<model>",
                "kind": node.kind,
                "shape": list(s.shape) if isinstance(s, torch.Tensor) else [],
                "dtype": str(s.dtype).removeprefix("torch.") if isinstance(s, torch.Tensor)
                else type(s).__name__,
                "bytes": e.nbytes() if node.kind in TENSOR_KINDS else 0,
                "op": producer,
                "adopted": e.adopted,
                "spec": node.bound.spec.name,
                "location": str(node.decl.location),
            })
        return rows

    def source(self) -> str:
        """The reload pass as readable Python source."""
        from .codegen import render_pass

        return render_pass(self)

    # ---- running --------------------------------------------------------------------------
    def _lookup(self, env: dict[str, Any]):
        def lookup(node_id: str) -> Any:
            if node_id in env:
                return env[node_id]
            entry = self.entries.get(node_id)
            if entry is not None:
                return entry.storage
            value = get_path(self.model, node_id)
            if value is MISSING:
                raise KeyError(f"source {node_id} is gone from the model")
            return value

        return lookup

    def _needed(self, updated: Iterable[str] | None) -> set[str] | None:
        if updated is None:
            return None
        names = list(updated)
        hit = {
            s for s in self.source_ptrs for n in names
            if s == n or s.startswith(n + ".") or fnmatch.fnmatchcase(s, n)
        }
        if not hit:
            return set()
        deps = self.graph.source_deps()
        # a step runs when any source it depends on was updated; intermediates it reads that
        # depend only on other sources are recomputed too (they are not cached between runs)
        dirty = {n for n, d in deps.items() if d & hit}
        needed = set(dirty)
        for node_id in dirty:
            needed |= {a for a in nx.ancestors(self.graph.g, node_id)
                       if self.graph.g.nodes[a]["kind"] == "op"}
        return needed

    def run(self, updated: Iterable[str] | None = None, *, verify: bool = False,
            take_engine_values: bool = False) -> RunReport:
        """Recompute derived tensors into their startup storage, then re-bind holders.

        ``updated``: source paths (exact, prefix or glob) that changed; only what depends on
        them is recomputed. ``None`` recomputes everything. ``take_engine_values``: where the
        engine's post-load step left a new tensor at a holder (same shape and dtype), copy its
        value instead of recomputing (the layerwise-reload refill). ``verify`` checks that no
        bound tensor or source changed object or address.
        """
        updated = None if updated is None else list(updated)
        if not take_engine_values:  # engine hook: refuse before anything is written
            refuse_recompute(self, updated)
        needed = self._needed(updated)
        report = RunReport(mode="refill" if take_engine_values else "recompute")
        start = time.perf_counter()
        env: dict[str, Any] = {}
        lookup = self._lookup(env)
        with torch.no_grad():
            report.restored = self._restore_storage()
            self.folds.apply(self.model, updated, report)  # fold hook: folds before derived
            for step in self.steps:
                if needed is not None and step.node not in needed:
                    continue
                self._execute(step, env, lookup, report, take_engine_values)
        report.rebinds = self.rebind(report)
        if self._on_cuda():
            torch.cuda.synchronize()  # report honest times; the pass itself is asynchronous
        report.seconds = time.perf_counter() - start
        if verify:
            report.moved = self.moved()
        return report

    def _restore_storage(self) -> list[str]:
        """Put startup storage back under tensors the engine re-pointed (``t.data = new``).

        The object is still ours, but a captured graph reads the startup address; the steps
        that follow write the current values into it.
        """
        restored = []
        for key, entry in self.entries.items():
            if entry.startup_data is None or address_of(entry.storage) == entry.startup_ptr:
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

    def _engine_value(self, entry: Entry) -> torch.Tensor | None:
        owner = get_path(self.model, entry.node.owner_path)
        if owner is MISSING or owner is None:
            return None
        current = get_path(owner, entry.node.decl.name)
        if (isinstance(current, torch.Tensor) and current is not entry.storage
                and current.shape == entry.storage.shape and current.dtype == entry.storage.dtype
                and current.device.type != "meta"):
            return current
        return None

    def _execute(self, step: Step, env: dict[str, Any], lookup: Any, report: RunReport,
                 take_engine: bool) -> None:
        if step.action == "compute":
            op = OPS[step.op]
            args = substitute(step.args, lookup)
            env[step.node] = op.fn(*args, **substitute(step.kwargs, lookup))
            report.steps += 1
            return
        entry = self.entries[step.node]
        if step.action == "scalar":
            new = float(lookup(step.input).item()) if entry.storage.__class__ is float else \
                lookup(step.input).item()
            if new != entry.storage and not (new != new and entry.storage != entry.storage):
                report.recapture_required.append(step.node)
            entry.storage = new
            report.steps += 1
            return
        if take_engine:
            fresh = self._engine_value(entry)
            if fresh is not None:
                entry.storage.copy_(fresh)
                report.taken_from_engine += 1
                report.written += 1
                report.bytes += entry.nbytes()
                report.steps += 1
                return
        if step.action == "engine":  # engine hook: no fresh value (kept, or refused above)
            if take_engine:
                check_refillable(self, entry)
            return
        if step.action == "out":
            OPS[step.op].out(*substitute(step.args, lookup), out=entry.storage,
                             **substitute(step.kwargs, lookup))
        else:
            entry.storage.copy_(lookup(step.input))
        report.steps += 1
        report.written += 1
        report.bytes += entry.nbytes()

    def rebind(self, report: RunReport | None = None) -> int:
        """Point every holder back at the startup object; returns how many were re-bound."""
        count = 0
        owners: dict[str, Any] = {}
        for entry in self.entries.values():
            path = entry.node.owner_path
            owner = owners[path] if path in owners else owners.setdefault(
                path, get_path(self.model, path))
            if owner is MISSING or owner is None:
                if report is not None:
                    report.missing_owners.append(entry.id)
                continue
            name = entry.node.decl.name
            current = get_path(owner, name)
            if entry.node.kind == "scalar":
                if current != entry.storage:
                    set_slot(owner, name, entry.storage, "attribute")
                    count += 1
                continue
            if current is entry.storage and slot_of(owner, name) == entry.slot:
                continue
            set_slot(owner, name, entry.storage, entry.slot, entry.node.decl.persistent)
            count += 1
        return count

    def moved(self) -> list[str]:
        """Bound tensors or sources whose holder now has another object or address."""
        moved = []
        for key, entry in self.entries.items():
            if entry.node.kind == "scalar":
                continue
            current = get_path(self.model, key)
            if current is not entry.storage or address_of(current) != entry.startup_ptr:
                moved.append(key)
        for path, (obj_id, ptr) in self.source_ptrs.items():
            current = get_path(self.model, path)
            if id(current) != obj_id or address_of(current) != ptr:
                moved.append(path)
        return moved
