"""Compile a model's derived tensors into a plan: allocate (or adopt) once, refill in place.

:func:`compile_plan` binds specs to a live model, builds and validates the DAG, checks every
tensor the engine already made against its formula, and only then allocates what is missing
and binds every tensor to its owner. :meth:`Plan.run` is the reload pass: topologically
ordered steps that write into the startup storage (``out=`` where the op has one, else compute
and ``copy_``), then re-bind every holder the engine rebuilt. No step allocates a tensor a
captured graph can see.
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

from .bind import match_specs
from .errors import AdoptionError, Rule, SpecIssue, SpecValidationError
from .graph import DerivedGraph, DerivedNode, build_graph, refs_in, substitute
from .ops import OPS
from .paths import MISSING, get_path, set_slot, slot_of
from .report import RunReport
from .spec import Spec

__all__ = ["Entry", "Plan", "Step", "compile_plan"]

logger = logging.getLogger(__name__)

_TENSOR_KINDS = ("parameter", "buffer", "attribute")


@dataclass
class Step:
    """One instruction of the reload pass.

    ``action`` is ``compute`` (an intermediate), ``out`` (an op writing straight into a
    derived tensor), ``copy`` (``copy_`` a value into a derived tensor) or ``scalar``
    (a Python number: set, and flagged for graph recapture when it changes).
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


def _ptr(t: Any) -> int:
    return t.data_ptr() if isinstance(t, torch.Tensor) and t.device.type != "meta" else 0


def _same_values(a: torch.Tensor, b: torch.Tensor, tol: float) -> tuple[bool, float]:
    if a.shape != b.shape:
        return False, float("inf")
    if a.numel() == 0:
        return True, 0.0
    a32 = a.detach().to(torch.float64) if not a.dtype.is_complex else a.detach()
    b32 = b.detach().to(device=a.device, dtype=a32.dtype)
    both_nan = torch.isnan(a32) & torch.isnan(b32)
    diff = torch.where(both_nan, torch.zeros_like(a32), (a32 - b32).abs())
    worst = float(diff.max())
    return worst <= tol, worst


class Plan:
    """The compiled, bound derived-tensor plan of one model."""

    def __init__(self, model: nn.Module, graph: DerivedGraph):
        self.model = model
        self.graph = graph
        self.entries: dict[str, Entry] = {}
        self.steps: list[Step] = []
        self.source_ptrs: dict[str, tuple[int, int]] = {}

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
                "bytes": e.nbytes() if node.kind in _TENSOR_KINDS else 0,
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
        needed = self._needed(updated)
        report = RunReport(mode="refill" if take_engine_values else "recompute")
        start = time.perf_counter()
        env: dict[str, Any] = {}
        lookup = self._lookup(env)
        with torch.no_grad():
            report.restored = self._restore_storage()
            for step in self.steps:
                if needed is not None and step.node not in needed:
                    continue
                self._execute(step, env, lookup, report, take_engine_values)
        report.rebinds = self.rebind(report)
        if self.graph.model is not None and any(
            t.device.type == "cuda" for t in self._tensors()
        ):
            torch.cuda.synchronize()
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
            if entry.startup_data is None or _ptr(entry.storage) == entry.startup_ptr:
                continue
            entry.storage.data = entry.startup_data
            restored.append(key)
        return restored

    def refill(self, *, verify: bool = False) -> RunReport:
        """After an engine reran its post-load step: keep its values, restore our storage."""
        return self.run(None, verify=verify, take_engine_values=True)

    def _tensors(self) -> Iterable[torch.Tensor]:
        return (e.storage for e in self.entries.values() if isinstance(e.storage, torch.Tensor))

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
            if current is not entry.storage or _ptr(current) != entry.startup_ptr:
                moved.append(key)
        for path, (obj_id, ptr) in self.source_ptrs.items():
            current = get_path(self.model, path)
            if id(current) != obj_id or _ptr(current) != ptr:
                moved.append(path)
        return moved


# ---- compilation ------------------------------------------------------------------------------

def _slot_for(node: DerivedNode, owner: Any, target: Any) -> str:
    if node.kind in ("parameter", "buffer", "attribute"):
        return node.kind
    if node.kind == "scalar":
        return "attribute"
    current = slot_of(owner, node.decl.name)
    if current == "parameter" and isinstance(target, nn.Parameter):
        return "parameter"
    if current == "buffer" and isinstance(owner, nn.Module):
        return "buffer"
    return "attribute"


def _evaluate_all(plan: Plan) -> dict[str, Any]:
    """Every derived node's value from the live sources (reads only)."""
    graph = plan.graph
    values: dict[str, Any] = {}

    def lookup(node_id: str) -> Any:
        if node_id in values:
            return values[node_id]
        return get_path(plan.model, node_id)

    with torch.no_grad():
        for node_id in graph.ordered():
            data = graph.g.nodes[node_id]
            if data["kind"] == "op":
                op = OPS[data["op"]]
                values[node_id] = op.fn(*substitute(data["args"], lookup),
                                        **substitute(data["kwargs"], lookup))
            elif data["kind"] == "derived":
                node = graph.derived[node_id]
                values[node_id] = lookup(node.input)
    return values


def _adopt_or_allocate(plan: Plan, values: dict[str, Any]) -> list[tuple[Entry, Any]]:
    graph = plan.graph
    issues: list[SpecIssue] = []
    planned: list[tuple[Entry, Any]] = []
    adopted_by: dict[int, str] = {}
    for node_id in graph.ordered():
        node = graph.derived.get(node_id)
        if node is None:
            continue
        owner = get_path(plan.model, node.owner_path)
        value = values[node_id]
        name = node.decl.name
        current = get_path(owner, name)
        loc = node.decl.location

        def issue(rule: str, msg: str, fix: str, node: DerivedNode = node, loc: Any = loc) -> None:
            issues.append(SpecIssue(rule, msg, fix, loc, node.id))

        if node.kind == "scalar":
            number = float(value.item()) if value.dtype.is_floating_point else value.item()
            held = isinstance(current, (int, float)) and not isinstance(current, bool)
            if held and abs(current - number) > node.decl.tolerance and not (
                    current != current and number != number):
                issue(Rule.ADOPTION, f"the engine's {name} = {current!r} differs from the "
                      f"formula {node.decl.formula!r} = {number!r}",
                      "the spec or the engine is wrong: fix the formula to match the engine, "
                      "or set `tolerance` if the difference is rounding")
                continue
            planned.append((Entry(node, number, "attribute", held), None))
            continue
        if node.kind == "alias":
            target_entry = next((e for e, _ in planned if e.id == node.input), None)
            target = target_entry.storage if target_entry else value
            if isinstance(current, torch.Tensor) and current is not target:
                ok, worst = _same_values(target, current, node.decl.tolerance)
                if not ok:
                    issue(Rule.ADOPTION, f"the engine holds a different tensor at {node_id} than "
                          f"its alias target {node.input} (max |diff| {worst:g})",
                          "fix `of`, or the engine: an alias must be the same object")
            planned.append((Entry(node, target, _slot_for(node, owner, target), current is target),
                            None))
            continue
        if node.kind == "view":
            base_id = _view_base(graph, node.input)
            base_entry = next((e for e, _ in planned if e.id == base_id), None)
            planned.append((Entry(node, None, _slot_for(node, owner, value), False),
                            (base_entry, base_id)))
            continue
        slot = slot_of(owner, name)
        if isinstance(current, torch.Tensor):
            problems = []
            if current.shape != value.shape:
                problems.append(f"shape {list(current.shape)} vs formula {list(value.shape)}")
            if current.dtype != value.dtype:
                problems.append(f"dtype {current.dtype} vs formula {value.dtype}")
            if current.device != value.device:
                problems.append(f"device {current.device} vs formula {value.device}")
            if slot != node.kind:
                problems.append(f"the engine holds it as a {slot}, the spec says {node.kind}")
            if problems:
                issue(Rule.ADOPTION, f"cannot adopt the engine's {name}: " + "; ".join(problems),
                      "make the spec match what the engine builds (kind, dtype, shape)")
                continue
            ok, worst = _same_values(current, value, node.decl.tolerance)
            if not ok:
                issue(Rule.ADOPTION, f"the engine's {name} differs from the formula "
                      f"{node.decl.formula!r} by up to {worst:g}",
                      "the spec or the engine is wrong: fix the formula to match the engine, "
                      "or set `tolerance` if the difference is rounding")
                continue
            if id(current) in adopted_by:
                issue(Rule.ALIAS, f"the engine holds {node_id} and {adopted_by[id(current)]} as "
                      "the same tensor object", f"declare {name} as kind 'alias' of the other")
                continue
            adopted_by[id(current)] = node_id
            planned.append((Entry(node, current, node.kind, True), None))
        else:
            storage = torch.empty_like(value, memory_format=torch.contiguous_format)
            if node.kind == "parameter":
                storage = nn.Parameter(storage, requires_grad=False)
            planned.append((Entry(node, storage, node.kind, False), value))
    if issues:
        raise AdoptionError(issues)
    return planned


def _view_base(graph: DerivedGraph, node_id: str) -> str:
    data = graph.g.nodes[node_id]
    while data["kind"] == "op":
        node_id = refs_in(data["args"])[0]
        data = graph.g.nodes[node_id]
    return node_id


def _build_steps(plan: Plan) -> list[Step]:
    graph = plan.graph
    consumers = {n: list(graph.g.successors(n)) for n in graph.g}
    steps: list[Step] = []
    fused: set[str] = set()
    for node_id in graph.ordered():
        node = graph.derived.get(node_id)
        if node is None or node.kind in ("alias", "view"):
            continue
        if node.kind == "scalar":
            steps.append(Step(node_id, "scalar", input=node.input))
            continue
        data = graph.g.nodes[node.input]
        entry = plan.entries[node_id]
        if (data["kind"] == "op" and consumers[node.input] == [node_id]
                and OPS[data["op"]].out is not None and refs_in(data["args"][:1])
                and entry.storage.is_contiguous() and node.meta is not None
                and node.meta.dtype == entry.storage.dtype
                and not _reads_storage_of(plan, node.input, entry.storage)):
            fused.add(node.input)
            steps.append(Step(node_id, "out", data["op"], data["args"], data["kwargs"]))
        else:
            steps.append(Step(node_id, "copy", input=node.input))
    ordered: list[Step] = []
    by_node = {s.node: s for s in steps}
    for node_id in graph.ordered():
        data = graph.g.nodes[node_id]
        if data["kind"] == "op" and node_id not in fused and not _only_feeds_views(graph, node_id):
            ordered.append(Step(node_id, "compute", data["op"], data["args"], data["kwargs"]))
        elif node_id in by_node:
            ordered.append(by_node[node_id])
    return ordered


def _reads_storage_of(plan: Plan, node_id: str, out: torch.Tensor) -> bool:
    """True if an argument of op ``node_id`` is (a view of) ``out``'s storage.

    Writing ``out=`` into a tensor the op also reads is undefined (torch refuses overlapping
    memory), so such a step computes into a temporary and copies instead.
    """
    target = out.untyped_storage().data_ptr()
    graph = plan.graph

    def leaf(ref: str) -> Any:
        data = graph.g.nodes[ref]
        if data["kind"] == "source":
            return get_path(plan.model, ref)
        if data["kind"] == "derived":
            entry = plan.entries.get(ref)
            return entry.storage if entry is not None else None
        if OPS[data["op"]].kind == "view":
            inner = refs_in(data["args"])
            return leaf(inner[0]) if inner else None
        return None  # a computed intermediate has storage of its own

    for ref in refs_in(graph.g.nodes[node_id]["args"]):
        tensor = leaf(ref)
        if isinstance(tensor, torch.Tensor) and tensor.device.type != "meta" and \
                tensor.untyped_storage().data_ptr() == target:
            return True
    return False


def _only_feeds_views(graph: DerivedGraph, node_id: str) -> bool:
    succ = list(graph.g.successors(node_id))
    return bool(succ) and all(
        (s in graph.derived and graph.derived[s].kind == "view")
        or (graph.g.nodes[s]["kind"] == "op" and _only_feeds_views(graph, s))
        for s in succ
    )


def compile_plan(model: nn.Module, specs: Iterable[Spec] | None = None, *,
                 require_match: bool = False) -> Plan:
    """Bind ``specs`` (default: built-in + plugins) to ``model`` and allocate-or-adopt once.

    Raises :class:`SpecValidationError` or :class:`AdoptionError` before touching any tensor.
    ``require_match`` makes a spec that matches no module an error.
    """
    from .loader import default_specs

    specs = list(default_specs() if specs is None else specs)
    bound = match_specs(model, specs)
    graph = build_graph(model, bound)
    if require_match:
        matched = {b.spec.name for b in bound}
        for spec in specs:
            if spec.name not in matched:
                graph.issues.append(SpecIssue(
                    Rule.NO_MATCH, f"spec {spec.name!r} matches no module of "
                    f"{type(model).__name__}", "check target classes, object and where",
                    spec.location))
    graph.raise_if_issues()
    plan = Plan(model, graph)
    values = _evaluate_all(plan)
    planned = _adopt_or_allocate(plan, values)
    # Nothing was touched so far. Now allocate, fill and bind.
    with torch.no_grad():
        for entry, extra in planned:
            if entry.node.kind == "view":
                base_entry, base_id = extra
                base = base_entry.storage if base_entry else get_path(model, base_id)
                entry.storage = _rebuild_view(plan, entry.node.input, base)
            elif isinstance(extra, torch.Tensor):
                entry.storage.copy_(extra)
            plan.entries[entry.id] = entry
    _check_views(plan)
    plan.rebind()
    for entry in plan.entries.values():
        entry.startup_ptr = _ptr(entry.storage)
        if entry.node.kind in _TENSOR_KINDS:
            entry.startup_data = entry.storage.detach()
    for src in graph.sources():
        tensor = get_path(model, src)
        plan.source_ptrs[src] = (id(tensor), _ptr(tensor))
    plan.steps = _build_steps(plan)
    logger.info("compiled %d derived tensors (%d adopted) over %d sources, %d steps, %d CSE hits",
                len(plan.entries), sum(e.adopted for e in plan.entries.values()),
                len(plan.source_ptrs), len(plan.steps), graph.cse_hits)
    return plan


def _rebuild_view(plan: Plan, node_id: str, base: torch.Tensor) -> torch.Tensor:
    data = plan.graph.g.nodes[node_id]
    if data["kind"] != "op":
        return base
    inner = refs_in(data["args"])[0]
    inner_value = _rebuild_view(plan, inner, base)
    args = substitute(data["args"], lambda r: inner_value)
    return OPS[data["op"]].fn(*args, **data["kwargs"])


def _check_views(plan: Plan) -> None:
    issues = []
    for entry in plan.entries.values():
        if entry.node.kind != "view":
            continue
        base_id = _view_base(plan.graph, entry.node.input)
        base = plan.entries[base_id].storage if base_id in plan.entries else get_path(
            plan.model, base_id)
        if entry.storage.untyped_storage().data_ptr() != base.untyped_storage().data_ptr():
            issues.append(SpecIssue(Rule.ALIAS, f"{entry.id} is not a view of its base's storage",
                                    "use only view ops in a view formula", entry.node.decl.location,
                                    entry.id))
    if issues:
        raise SpecValidationError(issues)
