"""Lower the graph to the reload pass: per-node steps, then grouped instructions, then Python.

:class:`Lowerer` (an :class:`~derivgraph.compiler.interpret.Interpreter`) turns every node into an
operand
and every derived tensor into a :class:`Step`: ``OUT`` (an op writing straight into the derived
storage through ``out=``; ``1.0 / x`` becomes ``reciprocal(out=)``), ``COPY`` (``copy_`` of a
value), ``COMPUTE`` (an intermediate) or ``SCALAR`` (a Python number, staged in a tensor).
Decisions made once here, never per run:

* constants that depend on no source (``full([E], K)``) were computed at compile and are left
  out of the pass;
* tensors are resolved at compile: sources, derived storage and views over them are *bound*
  (globals of the generated code), re-resolved only when a holder was rebuilt;
* per-source cones are known (:meth:`derivgraph.runtime.plan.Plan.run` with ``updated=``).

:func:`build_program` schedules steps in dependency levels (also respecting storage that
aliases across tensors), groups identical ops of one level into ``torch._foreach_*`` calls
over prebuilt lists, and emits Python that is ``exec``'d: the printed pass is the pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from derivgraph._enum import StrEnum
from derivgraph.compiler.graph import NodeRef, refs_in, substitute
from derivgraph.compiler.interpret import Interpreter
from derivgraph.compiler.ir import NodeKind
from derivgraph.ops import OPS, OpKind
from derivgraph.spec.kinds import TensorKind

if TYPE_CHECKING:
    from derivgraph.runtime.plan import Plan

__all__ = ["Action", "Program", "Step", "build_program", "lower_steps"]

_RESHAPES = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze"})
# ops that only copy their input when it lands in contiguous storage of the same dtype (a cast
# only when it keeps the dtype): a step writing derived storage skips them (no temporary)
_LAYOUT_COPIES = frozenset({"contiguous", "clone", "cast"})
_FOREACH_UNARY = {name: f"_foreach_{name}_" for name in
                  ("reciprocal", "abs", "exp", "log", "sqrt", "rsqrt", "neg")}
_FOREACH_BINARY = {"add": "_foreach_add_", "sub": "_foreach_sub_", "mul": "_foreach_mul_",
                   "div": "_foreach_div_", "maximum": "_foreach_maximum_",
                   "minimum": "_foreach_minimum_"}
_SCALAR_OK = frozenset({"add", "sub", "mul"})  # `x / c` is not grouped: CUDA multiplies by 1/c


class Action(StrEnum):
    """What one step of the pass does."""

    COMPUTE = "compute"  # an intermediate: tmp = op(...)
    OUT = "out"          # op(..., out=derived storage)
    COPY = "copy"        # derived storage.copy_(value)
    SCALAR = "scalar"    # stage a Python scalar's value in a tensor (read after the pass)


@dataclass
class Step:
    """One per-node step of the reload pass (before grouping)."""

    node: str
    action: Action
    op: str | None = None
    args: Any = ()
    kwargs: Any = field(default_factory=dict)
    input: str | None = None
    target: str = ""          # the derived node written (OUT, COPY, SCALAR)
    scale: float | None = None  # `c / x` lowered to reciprocal(out=) then mul_(c)


# ---- per-node lowering ----------

class Lowerer(Interpreter):
    """Walks the graph once and emits :class:`Step` s; constants and views are bound, not run."""

    def __init__(self, plan: Plan):
        super().__init__(plan.graph)
        self.plan = plan
        self.deps = plan.graph.source_deps()
        users = plan.graph.ir.users
        self.users = users
        self.steps: list[Step] = []
        self.fused: set[str] = set()

    def lower(self) -> list[Step]:
        graph = self.graph
        for node_id in graph.ordered():
            node = graph.nodes[node_id]
            if node.kind is NodeKind.DERIVED:
                self._derived(graph.derived[node_id])
        by_target = {s.target: s for s in self.steps}
        out: list[Step] = []
        for node_id in graph.ordered():
            node = graph.nodes[node_id]
            if node.kind is NodeKind.OP:
                if node_id in self.fused or not self.deps[node_id] \
                        or self.plan.bound_view(node_id) is not None \
                        or _only_feeds_views(graph, self.users, node_id):
                    continue
                out.append(Step(node_id, Action.COMPUTE, node.op, node.args, node.kwargs))
            elif node_id in by_target:
                out.append(by_target[node_id])
        return out

    def _derived(self, node: Any) -> None:
        kind = node.kind
        if kind in (TensorKind.ALIAS, TensorKind.VIEW) or node.input is None:
            return
        if not self.deps[node.id] and kind is not TensorKind.SCALAR:
            return  # a constant: computed at compile, never again
        if kind is TensorKind.SCALAR:
            self.steps.append(Step(node.id, Action.SCALAR, input=node.input, target=node.id))
            return
        entry = self.plan.entries[node.id]
        producer, out_shape = self._out_producer(node, entry.storage)
        if producer is not None:
            p = self.graph.nodes[producer]
            chain_ok = not self.plan.reads_storage_of(producer, entry.storage)
            if chain_ok:
                args, op, scale = p.args, p.op, None
                if p.op == "div" and not refs_in(args[:1]) and refs_in(args[1:2]) \
                        and isinstance(args[0], float) and entry.storage.dtype.is_floating_point:
                    op, args, scale = "reciprocal", (args[1],), (None if args[0] == 1.0
                                                                  else args[0])
                    if not _is_float_ref(self.plan, args[0], entry.storage.dtype):
                        op = None
                if op is not None and (op == "reciprocal" or refs_in(args[:1])):
                    self.fused.add(producer)
                    self.fused.update(self._chain_between(node.input, producer))
                    self.steps.append(Step(node.id, Action.OUT, op, args, p.kwargs,
                                           input=None, target=node.id, scale=scale))
                    if out_shape is not None:
                        self.plan.out_views[node.id] = out_shape
                    return
        self.steps.append(Step(node.id, Action.COPY, input=self._copy_input(node.input, node.id),
                               target=node.id))

    def _is_layout_copy(self, node_id: str) -> bool:
        """A contiguous/clone, or a cast that keeps the dtype: its value is its input's."""
        cur = self.graph.nodes[node_id]
        if cur.kind is not NodeKind.OP or cur.op not in _LAYOUT_COPIES or not cur.inputs \
                or refs_in(cur.args[1:]) or refs_in(cur.kwargs):
            return False
        if cur.op != "cast":
            return True
        a, b = self.plan.meta_env.get(cur.inputs[0]), self.plan.meta_env.get(node_id)
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype

    def _copy_input(self, value: str, user: str) -> str:
        """The value a COPY reads: ``copy_`` takes any layout, so layout copies are skipped
        (never onto a value over the target's own storage: copy_ needs no overlap)."""
        target = self.plan.entries[user].storage
        ptr = target.untyped_storage().data_ptr() if isinstance(target, torch.Tensor) else None
        skipped = []
        while self._is_layout_copy(value) and self.users[value] == [user]:
            inner = self.graph.nodes[value].inputs[0]
            if ptr is not None and ptr in self.plan._ptrs(inner):
                break
            skipped.append(value)
            value, user = inner, value
        self.fused.update(skipped)
        return value

    def _chain_between(self, top: str, producer: str) -> list[str]:
        chain, node_id = [], top
        while node_id != producer:
            chain.append(node_id)
            node_id = self.graph.nodes[node_id].inputs[0]
        return chain

    def _out_producer(self, node: Any, storage: torch.Tensor) -> tuple[str | None, Any]:
        """The op that can write straight into ``storage`` (through a reshape chain)."""
        if not isinstance(storage, torch.Tensor) or not storage.is_contiguous() \
                or node.meta is None or node.meta.dtype != storage.dtype:
            return None, None
        graph, users = self.graph, self.users
        node_id, reshaped = node.input, False
        cur = graph.nodes[node_id]
        if cur.kind is not NodeKind.OP or users[node_id] != [node.id]:
            return None, None
        while cur.kind is NodeKind.OP and (cur.op in _RESHAPES or self._is_layout_copy(cur.id)):
            inner = cur.inputs[0] if cur.inputs else None
            if inner is None or graph.nodes[inner].kind is not NodeKind.OP \
                    or users[inner] != [cur.id]:
                return None, None
            reshaped = reshaped or cur.op in _RESHAPES
            cur = graph.nodes[inner]
        op = OPS[cur.op]
        if op.kind is not OpKind.COMPUTE or (op.out is None and cur.op != "div"):
            return None, None
        if cur.op == "div" and op.out is None:
            return None, None
        shape = None
        if reshaped:
            meta = self.plan.meta_env.get(cur.id)
            if not isinstance(meta, torch.Tensor) or meta.numel() != storage.numel() \
                    or meta.dtype != storage.dtype:
                return None, None
            shape = tuple(meta.shape)
        return cur.id, shape


def _is_float_ref(plan: Plan, ref: Any, dtype: torch.dtype) -> bool:
    meta = plan.meta_env.get(ref.id) if isinstance(ref, NodeRef) else None
    return isinstance(meta, torch.Tensor) and meta.dtype == dtype


def _only_feeds_views(graph: Any, users: dict[str, list[str]], node_id: str) -> bool:
    succ = users[node_id]
    return bool(succ) and all(
        (s in graph.derived and graph.derived[s].kind is TensorKind.VIEW)
        or (graph.nodes[s].kind is NodeKind.OP and _only_feeds_views(graph, users, s))
        for s in succ
    )


def lower_steps(plan: Plan) -> list[Step]:
    """Every per-node step of the full pass, in topological order."""
    return Lowerer(plan).lower()


# ---- grouping and code generation ----------

@dataclass
class Program:
    """A lowered pass: its Python source, the compiled function, and which nodes each line runs."""

    name: str
    source: str
    fn: Any
    line_nodes: dict[int, tuple[str, ...]]
    steps: list[Step]
    groups: int = 0


class _Names:
    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.used: set[str] = set(taken)

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_") or "v"
        if base[0].isdigit():
            base = f"_{base}"
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}_{n}"
        self.used.add(candidate)
        return candidate


def _literal(value: Any) -> str | None:
    """Python source for a constant, or None when it needs a bound global."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        parts = [_literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        if isinstance(value, list):
            return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore
    if isinstance(value, slice):
        parts = [_literal(p) for p in (value.start, value.stop, value.step)]
        if any(p is None and v is not None for p, v in
               zip(parts, (value.start, value.stop, value.step))):
            return None
        return f"slice({', '.join(p or 'None' for p in parts)})"
    return None


class _Emitter:
    """Renders operands as names in one shared bindings namespace."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.locals: dict[str, str] = {}
        self.names = _Names(plan.bindings)

    def operand(self, ref: str) -> str:
        if ref in self.locals:
            return self.locals[ref]
        return self.plan.bound_name(ref)

    def value(self, value: Any) -> str:
        if isinstance(value, NodeRef):
            return self.operand(value.id)
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        if isinstance(value, tuple):
            inner = ", ".join(self.value(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        text = _literal(value)
        return text if text is not None else self.plan.constant_name(value)

    def call(self, op: str, args: Any, kwargs: dict[str, Any], out: str = "") -> str:
        parts = [self.value(a) for a in args]
        parts += [f"{k}={self.value(v)}" for k, v in kwargs.items()]
        if out:
            parts.append(f"out={out}")
            return f"ops.{op}.out({', '.join(parts)})"
        return f"ops.{op}.fn({', '.join(parts)})"


def _levels(plan: Plan, steps: list[Step]) -> list[int]:
    """A dependency level per step: after what it reads (values and aliasing storage)."""
    level_of_node: dict[str, int] = {}
    last_write: dict[int, int] = {}
    last_read: dict[int, int] = {}
    levels = []
    for step in steps:
        reads = plan.step_reads(step)
        writes = plan.step_writes(step)
        lvl = 0
        for ref in refs_in(step.args) + refs_in(step.kwargs) + ([step.input] if step.input else []):
            lvl = max(lvl, level_of_node.get(ref, -1) + 1)
        for ptr in reads:
            lvl = max(lvl, last_write.get(ptr, -1) + 1)
        for ptr in writes:
            lvl = max(lvl, last_write.get(ptr, -1) + 1, last_read.get(ptr, -1) + 1)
        levels.append(lvl)
        level_of_node[step.node] = lvl
        if step.target:
            level_of_node[step.target] = lvl
        for ptr in reads:
            last_read[ptr] = max(last_read.get(ptr, -1), lvl)
        for ptr in writes:
            last_write[ptr] = max(last_write.get(ptr, -1), lvl)
    return levels


def _group_key(plan: Plan, step: Step) -> Any:
    """Steps with equal keys (in one level) run as one ``torch._foreach_*`` call."""
    if step.action is Action.COPY:
        return ("copy",)
    if step.action is not Action.OUT or step.kwargs:
        return None
    out = plan.out_tensor(step.target)
    if step.op in _FOREACH_UNARY and len(step.args) == 1:
        a = plan.meta_of(step.args[0])
        if a is None or a.shape != out.shape or a.dtype != out.dtype:
            return None
        return ("unary", step.op, out.dtype, out.device, step.scale)
    if step.op in _FOREACH_BINARY and len(step.args) == 2:
        a, b = plan.meta_of(step.args[0]), step.args[1]
        if a is None or a.shape != out.shape or a.dtype != out.dtype:
            return None
        if isinstance(b, NodeRef):
            bm = plan.meta_of(b)
            if bm is None or bm.dtype != out.dtype:
                return None
            return ("binary", step.op, out.dtype, out.device)
        if step.op in _SCALAR_OK and isinstance(b, (int, float)) and not isinstance(b, bool) \
                and out.dtype.is_floating_point:
            return ("scalar", step.op, out.dtype, out.device, float(b).hex())
    return None


def build_program(plan: Plan, steps: list[Step], name: str, *, group: bool = True) -> Program:
    """Schedule, group and emit ``steps`` as a Python function ``name`` and compile it."""
    em = _Emitter(plan)
    levels = _levels(plan, steps)
    order = sorted(range(len(steps)), key=lambda i: levels[i])  # stable within a level
    lines: list[tuple[str, tuple[str, ...]]] = []
    groups = 0
    i = 0
    while i < len(order):
        lvl = levels[order[i]]
        j = i
        while j < len(order) and levels[order[j]] == lvl:
            j += 1
        batch = [steps[k] for k in order[i:j]]
        by_key: dict[Any, list[Step]] = {}
        singles: list[Step] = []
        for step in batch:
            key = _group_key(plan, step) if group else None
            (by_key.setdefault(key, []) if key is not None else singles).append(step)
        for step in singles:
            lines += _emit_single(plan, em, step)
        for key, members in by_key.items():
            if len(members) == 1:
                lines += _emit_single(plan, em, members[0])
            else:
                groups += 1
                lines += _emit_group(plan, em, key, members)
        i = j
    body = [text for text, _ in lines] or ["pass"]
    header = [f"def {name}():"]
    src = "\n".join(header + [f"    {line}" for line in body]) + "\n"
    filename = f"<derivgraph {name} {id(plan):x}>"
    code = compile(src, filename, "exec")
    exec(code, plan.bindings)  # noqa: S102 - generated from the lowered steps, no spec text
    line_nodes = {n + 2: nodes for n, (_, nodes) in enumerate(lines)}
    return Program(name, src, plan.bindings[name], line_nodes, steps, groups)


def _emit_single(plan: Plan, em: _Emitter, step: Step) -> list[tuple[str, tuple[str, ...]]]:
    nodes = (step.target or step.node,)
    if step.action is Action.COMPUTE:
        var = em.names.fresh("t_" + step.node.split(":")[-1] + "_" + step.node[1:].split(":")[0])
        em.locals[step.node] = var
        return [(f"{var} = {em.call(step.op, step.args, step.kwargs)}", (step.node,))]
    if step.action is Action.SCALAR:
        stage = plan.stage_name(step.target)
        return [(f"{stage}.copy_({em.operand(step.input)})  # {step.target}: a Python scalar set "
                 "after the pass; NOT refillable: graph recapture required", nodes)]
    out = plan.out_name(step.target)
    if step.action is Action.COPY:
        return [(f"{out}.copy_({em.operand(step.input)})", nodes)]
    lines = [(em.call(step.op, step.args, step.kwargs, out), nodes)]
    if step.scale is not None:
        lines.append((f"{out}.mul_({em.value(step.scale)})", nodes))
    return lines


def _list(plan: Plan, em: _Emitter, refs: list[str]) -> str:
    """A prebuilt global list when every tensor is bound, else a list of local names."""
    if all(r not in em.locals and plan.is_bound(r) for r in refs):
        return plan.list_name(refs)
    return "[" + ", ".join(em.operand(r) for r in refs) + "]"


def _emit_group(plan: Plan, em: _Emitter, key: Any, members: list[Step]) \
        -> list[tuple[str, tuple[str, ...]]]:
    nodes = tuple(s.target for s in members)
    outs = plan.list_name([plan.out_ref(s.target) for s in members])
    if key[0] == "copy":
        ins = _list(plan, em, [s.input for s in members])
        return [(f"torch._foreach_copy_({outs}, {ins})", nodes)]
    a = _list(plan, em, [s.args[0].id for s in members])
    lines = [(f"torch._foreach_copy_({outs}, {a})", nodes)]
    if key[0] == "unary":
        lines.append((f"torch.{_FOREACH_UNARY[key[1]]}({outs})", nodes))
        if key[4] is not None:
            lines.append((f"torch._foreach_mul_({outs}, {em.value(key[4])})", nodes))
    elif key[0] == "binary":
        b = _list(plan, em, [s.args[1].id for s in members])
        lines.append((f"torch.{_FOREACH_BINARY[key[1]]}({outs}, {b})", nodes))
    else:
        value = float.fromhex(key[4])
        lines.append((f"torch.{_FOREACH_BINARY[key[1]]}({outs}, {em.value(value)})", nodes))
    return lines


def substitute_refs(value: Any, lookup: Any) -> Any:
    """Re-export of :func:`derivgraph.compiler.graph.substitute` for generated-code helpers."""
    return substitute(value, lookup)
