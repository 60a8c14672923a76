"""Compile a model's derived tensors into a plan: allocate (or adopt) once, refill in place.

:func:`compile_plan` binds specs to a live model, builds and validates the DAG, checks every
tensor the engine already made against its formula, and only then allocates what is missing
and binds every tensor to its owner. The result is a :class:`~derivgraph.runtime.Plan`, whose
``run`` / ``refill`` is the reload pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from .bind import match_specs
from .dag import DerivedGraph, DerivedNode, refs_in, substitute
from .engine_values import adoption_problem, is_engine
from .errors import AdoptionError, Rule, SpecIssue, SpecValidationError
from .fold import compile_folds
from .graph import build_graph
from .ops import OPS
from .paths import get_path, slot_of
from .runtime import TENSOR_KINDS, Entry, Plan, Step, address_of
from .spec import Spec

__all__ = ["Entry", "Plan", "Step", "compile_plan"]

logger = logging.getLogger(__name__)


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
                # engine hook: an opaque engine tensor's value is the engine's own tensor
                values[node_id] = lookup(node.input if node.input is not None else node_id)
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
        if is_engine(node.decl):  # engine hook: adopt what the engine made, never allocate
            problem = adoption_problem(node, current, value)
            if problem is not None:
                issue(*problem)
            elif id(current) in adopted_by:
                issue(Rule.ALIAS, f"the engine holds {node_id} and {adopted_by[id(current)]} as "
                      "the same tensor object", f"declare {name} as kind 'alias' of the other")
            else:
                adopted_by[id(current)] = node_id
                planned.append((Entry(node, current, slot, True), None))
            continue
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
        if node.input is None:  # engine hook: only refill() can fill an opaque engine tensor
            steps.append(Step(node_id, "engine"))
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
    folds = compile_folds(model, bound, graph.issues, graph.derived)  # fold hook
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
    plan.folds = folds  # fold hook: compile records the engine's first fold as applied
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
        entry.startup_ptr = address_of(entry.storage)
        if entry.node.kind in TENSOR_KINDS:
            entry.startup_data = entry.storage.detach()
    for src in [*graph.sources(), *folds.entries]:  # fold hook: fold sources are graph-visible
        tensor = get_path(model, src)
        plan.source_ptrs[src] = (id(tensor), address_of(tensor))
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
