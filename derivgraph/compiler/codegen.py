"""Generate the reload pass as Python: one namespace of bound names, scheduling, grouping.

:class:`Bindings` is the one namespace of the generated code: every global (a bound tensor, a
prebuilt list, a constant, a runtime helper) is named once through a typed key, and locals are
drawn from the same name supply. :func:`build_program` schedules steps in dependency levels
(also respecting storage that aliases across tensors), groups identical ops of one level into
``torch._foreach_*`` calls over prebuilt lists (on CPU, many small tensors as whole-buffer ops
over the memory that holds them: :mod:`derivgraph.compiler.flat`), and emits a function that
is compiled and registered with :mod:`linecache` (tracebacks through the pass show the
generated line): the printed pass is the pass.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_, ne
from typing import Any, NamedTuple

import numpy as np
import torch

from derivgraph._enum import StrEnum
from derivgraph.column_layout import ColumnFacts, ColumnLayouts, book_of, tensor_method
from derivgraph.compiler import flat
from derivgraph.compiler.copies import has_identity_reductions, row_copies, stage_directly
from derivgraph.compiler.generated import define
from derivgraph.compiler.graph import NodeRef
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.lower import (
    Action,
    LayerSteps,
    LowerContext,
    LoweredSteps,
    Step,
    out_tensor,
    out_tensors,
)
from derivgraph.compiler.schedule import compact_levels
from derivgraph.compiler.schedule import levels as _levels
from derivgraph.compiler.schedule_layers import row_keys, same_key_facts
from derivgraph.ops import OPS, OpKind
from derivgraph.spec.kinds import TensorKind

__all__ = ["Bindings", "Bound", "Constant", "Flat", "GroupKey", "Helper", "Members", "OutView",
           "Program", "RowsOf", "Stage", "TensorList", "build_program", "compile_function",
           "literal"]

_FOREACH_UNARY = {name: f"_foreach_{name}_" for name in
                  ("reciprocal", "abs", "exp", "log", "sqrt", "rsqrt", "neg")}
_FOREACH_BINARY = {"add": "_foreach_add_", "sub": "_foreach_sub_", "mul": "_foreach_mul_",
                   "div": "_foreach_div_", "maximum": "_foreach_maximum_",
                   "minimum": "_foreach_minimum_"}
_SCALAR_OK = frozenset({"add", "sub", "mul"})  # `x / c` is not grouped: CUDA multiplies by 1/c
#: reductions of one-element tensors grouped into one call (one element: the same bits)
_FOREACH_REDUCE = {"amax": "_foreach_max"}
_UNBOUND = object()
_SOURCE, _DERIVED, _SCALAR = NodeKind.SOURCE, NodeKind.DERIVED, TensorKind.SCALAR


# ---- binding keys: what each global of the generated code holds ----------

class Bound(NamedTuple):
    """The tensor bound at compile for a node: a source, derived storage, a view or a constant
    (a named tuple, made and hashed in C: a foreach list's key holds one per member; it equals
    no other key, every other key being a dataclass)."""

    ref: str


def _bound_keys(refs: list[str]) -> tuple[Bound, ...]:
    """``tuple(map(Bound, refs))``, each key made in C (``tuple.__new__`` of a 1-tuple)."""
    return tuple(map(_TUPLE_NEW, repeat(Bound), zip(refs)))


_TUPLE_NEW = tuple.__new__


@dataclass(frozen=True)
class OutView:
    """Derived storage seen through the shape an ``out=`` op writes (a reshape chain)."""

    target: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class RowsOf:
    """Rows ``[start, stop)`` of derived storage: where one input of a dim-0 ``cat`` lands."""

    target: str
    start: int
    stop: int


@dataclass(frozen=True)
class Stage:
    """The staging tensor of a derived Python scalar (``shape``: viewed in the shape of a
    one-element input copied into it, :func:`~derivgraph.compiler.copies.stage_directly`)."""

    target: str
    shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Constant:
    """A Python constant that has no literal (a non-finite float, a dtype, a tensor)."""

    serial: int


@dataclass(frozen=True)
class TensorList:
    """A prebuilt list of bound tensors (the operand of a ``torch._foreach_*`` call)."""

    items: tuple[Bound | OutView | RowsOf | Stage, ...]


@dataclass(frozen=True)
class Flat:
    """A global of a group run over flat buffers (:mod:`derivgraph.compiler.flat`): ``role``
    is ``span_out``/``span_in`` (the memory holding the outputs / the operands), ``at_out``,
    ``at_a``, ``at_b`` (element indices in them), ``buf``, ``buf_b`` (the buffers) or
    ``held`` (the storages addressed, kept alive by the pass)."""

    role: str
    targets: tuple[str, ...]
    operands: tuple[str, ...] = ()  # at_a, at_b: the nodes read, in the targets' order


@dataclass(frozen=True)
class Helper:
    """A runtime function the generated code calls (``torch``, ``ops``, plan helpers)."""

    name: str


BindingKey = Bound | OutView | RowsOf | Stage | Constant | TensorList | Flat | Helper


class Bindings:
    """The namespace of generated code: globals by name, the key each name binds, locals."""

    def __init__(self) -> None:
        self.globals: dict[str, Any] = {}
        self.names: dict[BindingKey, str] = {}
        self._used: set[str] = set()
        self._constants = itertools.count()

    def clear(self) -> None:
        """Forget every name (the functions compiled so far keep their own globals dict)."""
        self.globals = {}
        self.names = {}
        self._used = set()

    def reserve(self, *names: str) -> None:
        """Keep ``names`` (the generated functions' own) out of the name supply."""
        self._used.update(names)

    def fresh(self, hint: str) -> str:
        """A new identifier made from ``hint``, unique in this namespace."""
        base = hint.replace(".", "_")  # a dotted path: what the pattern below makes of it
        if ".." in hint or not (base.isascii() and base.isidentifier()):
            base = re.sub(r"\W+", "_", hint)
        base = base.strip("_") or "v"
        if base[0].isdigit():
            base = f"_{base}"
        name, n = base, 1
        while name in self._used:
            n += 1
            name = f"{base}_{n}"
        self._used.add(name)
        return name

    def bind(self, key: BindingKey, hint: str, value: Any) -> str:
        """The name of ``key`` (made on first use), now bound to ``value``."""
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = self.fresh(hint)
        self.globals[name] = value
        return name

    def helper(self, name: str, value: Any) -> str:
        """Bind a runtime function under its own name."""
        return self.bind(Helper(name), name, value)

    def constant(self, value: Any) -> str:
        return self.bind(Constant(next(self._constants)), "const", value)


@dataclass
class Program:
    """A generated function: its Python source, the compiled function, the nodes per line."""

    name: str
    source: str
    fn: Any
    line_nodes: dict[int, tuple[str, ...]]
    steps: list[Step]
    groups: int = 0
    counts: tuple[int, int, int] | None = None  # steps, tensors and bytes written: set once
    #: the generated functions it calls by name, printed after it (``Plan.source``)
    calls: tuple[Program, ...] = ()


def compile_function(bindings: Bindings, name: str, body: list[tuple[str, tuple[str, ...]]],
                     *, params: str = "", doc: str = "", steps: list[Step] | None = None,
                     groups: int = 0) -> Program:
    """Compile ``def name(params): body`` into ``bindings`` and register it with linecache.

    ``name`` must be reserved in ``bindings`` (:meth:`Bindings.reserve`), so that no bound
    value shadows it.
    """
    head = [f"def {name}({params}):"] + ([f'    """{doc}"""'] if doc else [])
    lines = body or [("pass", ())]
    src = "\n".join(head + [f"    {text}" for text, _ in lines]) + "\n"
    fn = define(src, name, bindings.globals, name)
    first = len(head) + 1
    line_nodes = {first + n: nodes for n, (_, nodes) in enumerate(lines) if nodes}
    return Program(name, src, fn, line_nodes, steps or [], groups)


def literal(value: Any) -> str | None:
    """Python source for a constant, or None when it needs a bound global."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        parts = [literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        if isinstance(value, list):
            return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore
    if isinstance(value, slice):
        parts = [literal(p) for p in (value.start, value.stop, value.step)]
        if any(p is None and v is not None for p, v in
               zip(parts, (value.start, value.stop, value.step))):
            return None
        return f"slice({', '.join(p or 'None' for p in parts)})"
    return None


class Emitter:
    """Renders operands as names in the shared :class:`Bindings`."""

    def __init__(self, ctx: LowerContext, bindings: Bindings, *, flat: bool = False):
        self.ctx = ctx
        self.bindings = bindings
        self.locals: dict[str, str] = {}
        self.flat = flat  # groups of small CPU tensors over flat buffers (compiler.flat)

    def operand(self, ref: str) -> str:
        local = self.locals.get(ref)
        if local is not None:
            return local
        derived = self.ctx.graph.derived_view.get(ref)
        if derived is not None and derived.kind is TensorKind.SCALAR:
            try:  # read the value staged by this pass, never the number bound at compile
                stage = self.ctx.stage(ref)
            except KeyError:
                stage = None
            if stage is not None:
                return self.bindings.bind(Stage(ref), f"{ref}_stage", stage)
        node = self.ctx.graph.nodes[ref]
        if node.kind is NodeKind.SOURCE:
            hint = f"src_{ref}"
        elif node.kind is NodeKind.OP:
            view = OPS[node.op].kind is OpKind.VIEW
            if view and node.inputs:
                self.operand(node.inputs[0])  # the base is named first: printed views show it
            hint = f"{'view' if view else 'const'}_{node.op}"
        else:
            hint = ref
        return self.bindings.bind(Bound(ref), hint, self.ctx.bound(ref))

    def value(self, value: Any) -> str:
        if isinstance(value, NodeRef):
            return self.operand(value.id)
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        if isinstance(value, tuple):
            inner = ", ".join(self.value(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        text = literal(value)
        return text if text is not None else self.bindings.constant(value)

    def call(self, op: str, args: Any, kwargs: dict[str, Any], out: str = "") -> str:
        parts = [self.value(a) for a in args]
        parts += [f"{k}={self.value(v)}" for k, v in kwargs.items()]
        if out:
            parts.append(f"out={out}")
            return f"ops.{op}.out({', '.join(parts)})"
        return f"ops.{op}.fn({', '.join(parts)})"

    def out(self, step: Step) -> str:
        """The name of what an OUT/COPY step writes."""
        if step.out_shape is None:
            return self.operand(step.target)
        return self.bindings.bind(OutView(step.target, step.out_shape), f"{step.target}_out",
                                  out_tensor(self.ctx, step))

    def out_key(self, step: Step) -> Bound | OutView:
        return Bound(step.target) if step.out_shape is None else \
            OutView(step.target, step.out_shape)

    def tensors(self, refs: list[str], alike: bool = False,
                values: list[Any] | None = None) -> str:
        """A prebuilt global list when every tensor is bound, else a list of local names
        (``alike``: see :meth:`list_members`; ``values``: the refs' bound values, where the
        caller holds them as ``bound_values`` reads them, else read here)."""
        local = self.locals
        if not local.keys().isdisjoint(refs):
            values = [_UNBOUND]
        elif values is None:
            values = self.ctx.bound_values(refs, _UNBOUND)
        if any(map(is_, values, repeat(_UNBOUND))):  # a local (or an unbound node) among them
            return "[" + ", ".join(self.operand(r) for r in refs) + "]"
        keys = self.list_members(refs, alike)
        return self.bindings.bind(TensorList(keys), "group", values)

    def list_members(self, refs: list[str], alike: bool = False) -> tuple[Bound, ...]:
        """The keys of ``refs`` (none a local) as members of one prebuilt list (a level's
        ``_foreach`` call, :func:`_copies` included): a source or
        a derived tensor is named by the list alone (the header prints the list by path, one
        global per list, not per tensor); any other node (a view, named over its base; a
        constant; a staged scalar) by :meth:`operand`. ``alike``: every ref is a node of the
        first's kinds (a column of a compact lowering: one template node, renamed), which alone
        is then read when it is named by the list."""
        nodes, derived = self.ctx.graph.nodes, self.ctx.graph.derived_view
        if alike and refs:
            kind = nodes[refs[0]].kind
            if kind is _SOURCE or kind is _DERIVED and derived[refs[0]].kind is not _SCALAR:
                return _bound_keys(refs)
        for ref in refs:
            kind = nodes[ref].kind
            if kind is _SOURCE or kind is _DERIVED and derived[ref].kind is not _SCALAR:
                continue
            self.operand(ref)
        return _bound_keys(refs)

    def outs(self, steps: list[Step], values: list[torch.Tensor] | None = None) -> str:
        """The prebuilt list of what ``steps`` write (``values``: their
        :func:`~derivgraph.compiler.lower.out_tensors`, when read already)."""
        if values is None:
            values = out_tensors(self.ctx, steps)
        if any(s.out_shape is not None for s in steps):
            for s in steps:
                self.out(s)
            return self.bindings.bind(TensorList(tuple(self.out_key(s) for s in steps)),
                                      "group", values)
        return self.outs_of([s.target for s in steps], values)

    def outs_of(self, targets: list[str], values: list[torch.Tensor],
                alike: bool = False) -> str:
        """The prebuilt list of the storages of ``targets`` (``values``), each written whole
        (``alike``: see :meth:`list_members`)."""
        if not self.locals.keys().isdisjoint(targets):
            for target in targets:
                self.operand(target)
            keys = _bound_keys(targets)
        else:
            keys = self.list_members(targets, alike)
        return self.bindings.bind(TensorList(keys), "group", values)


class GroupKind(StrEnum):
    """The shape of one grouped ``torch._foreach_*`` instruction."""

    COPY = "copy"      # _foreach_copy_(outs, ins)
    UNARY = "unary"    # copy, then _foreach_<op>_(outs) [and _foreach_mul_(outs, scale)]
    BINARY = "binary"  # copy, then _foreach_<op>_(outs, tensors)
    SCALAR = "scalar"  # copy, then _foreach_<op>_(outs, number)
    STAGE = "stage"    # _foreach_copy_(stages, ins): derived Python scalars staged
    REDUCE = "reduce"  # locals = _foreach_<op>(ins): a reduction of one-element tensors


class GroupKey(NamedTuple):
    """Steps with equal keys (in one level) run as one ``torch._foreach_*`` call."""

    kind: GroupKind
    op: str | None = None
    dtype: torch.dtype | None = None
    device: torch.device | None = None
    scale: float | None = None  # UNARY: the `c` of `c / x`
    scalar: str | None = None   # SCALAR: the number, as float.hex (exact, NaN-safe)


def _group_key(ctx: LowerContext, step: Step) -> GroupKey | None:
    if step.action is Action.COPY:
        return GroupKey(GroupKind.COPY)
    if step.action is Action.SCALAR:
        return GroupKey(GroupKind.STAGE)
    if step.action is Action.COMPUTE:
        return _reduce_key(ctx, step)
    if step.action is not Action.OUT or step.kwargs:
        return None
    out = out_tensor(ctx, step)
    if step.op in _FOREACH_UNARY and len(step.args) == 1:
        a = ctx.meta_of(step.args[0])
        if a is None or a.shape != out.shape or a.dtype != out.dtype:
            return None
        return GroupKey(GroupKind.UNARY, step.op, out.dtype, out.device, scale=step.scale)
    if step.op in _FOREACH_BINARY and len(step.args) == 2:
        a, b = ctx.meta_of(step.args[0]), step.args[1]
        if a is None or a.shape != out.shape or a.dtype != out.dtype:
            return None
        if isinstance(b, NodeRef):
            bm = ctx.meta_of(b)
            if bm is None or bm.dtype != out.dtype:
                return None
            return GroupKey(GroupKind.BINARY, step.op, out.dtype, out.device)
        if step.op in _SCALAR_OK and isinstance(b, (int, float)) and not isinstance(b, bool) \
                and out.dtype.is_floating_point:
            return GroupKey(GroupKind.SCALAR, step.op, out.dtype, out.device,
                            scalar=float(b).hex())
    return None


def _reduce_key(ctx: LowerContext, step: Step) -> GroupKey | None:
    """A whole-tensor reduction of a one-element tensor (its value, bit for bit, whatever the
    kernel): grouped with the others of its op."""
    if step.op not in _FOREACH_REDUCE or step.kwargs or len(step.args) != 1 \
            or not isinstance(step.args[0], NodeRef):
        return None
    a = ctx.meta_of(step.args[0])
    if a is None or a.numel() != 1:
        return None
    return GroupKey(GroupKind.REDUCE, step.op, a.dtype, a.device)


Lines = list[tuple[str, tuple[str, ...]]]


def build_program(ctx: LowerContext, bindings: Bindings, steps: list[Step], name: str, *,
                  group: bool = True, flat: bool = True) -> Program:
    """Schedule, group and emit ``steps`` as a Python function ``name`` and compile it
    (``flat``: groups of many small CPU tensors as whole-buffer ops, :mod:`.flat`; grouped,
    the copy-shaped steps of a level run as one ``_foreach_copy_``, :mod:`.copies`)."""
    if isinstance(steps, LoweredSteps) and steps.compact:
        columns = _column_plan(ctx, steps) if group else None
        if columns is not None:  # each row a column of its template's step
            lines, groups = _emit_levels(Emitter(ctx, bindings, flat=flat), columns[0], {}, True,
                                         columns[2])
            return compile_function(bindings, name, lines, steps=steps, groups=groups)
        steps = steps.expanded()  # each row's steps made: scheduled and keyed as below
    em = Emitter(ctx, bindings, flat=flat)
    run, direct = stage_directly(ctx, steps) if group else (steps, {})
    # stamped rows lowered from their template's steps: its levels and keys where proven
    layers = steps.layers if isinstance(steps, LoweredSteps) else ()
    levels = _levels(ctx, run, layers)
    keys = row_keys(ctx, run, layers, _group_key) if group else [None] * len(run)
    order = sorted(range(len(run)), key=lambda i: levels[i])  # stable within a level
    buckets: _Buckets = []
    for _lvl, members in itertools.groupby(order, key=lambda i: levels[i]):
        by_key: dict[GroupKey, list[Step]] = {}
        singles: list[Step] = []
        for k in members:
            key = keys[k]
            (by_key.setdefault(key, []) if key is not None else singles).append(run[k])
        buckets.append((singles, list(by_key.items())))  # type: ignore[arg-type]
    lines, groups = _emit_levels(em, buckets, direct, group)
    return compile_function(bindings, name, lines, steps=steps, groups=groups)


#: a compact lowering's buckets: per level, its (key, members) in the order a full lowering
#: groups them; a member is a step, or (a template's step, its layer) standing for its column
_Buckets = list[tuple[list[Step], list[tuple[GroupKey, list[Step | tuple[Step, LayerSteps]]]]]]


def _column_plan(ctx: LowerContext, steps: LoweredSteps,
                 ) -> tuple[_Buckets, list[Any], dict[tuple[int, str], list[Any]]] | None:
    """The levels and group keys of a compact lowering (its rows' steps left out, each a
    column of its template step), grouped as :func:`build_program` groups a full lowering's:
    when the layers' levels are proven (:func:`~derivgraph.compiler.schedule.compact_levels`),
    every row of a template step takes its key (:func:`~derivgraph.compiler.schedule_layers.
    same_key_facts`: an ``out=`` op grouped as ``UNARY``/``BINARY``/``SCALAR``), no identity
    reduction is staged directly, and a column is alone in its group (so its members are
    listed template first, then its rows, as the full lowering lists them); else None. The
    third item: each written column's rows' values as ``same_key_facts`` read them, by the
    table's id and the template step's target (the emission's, read once: nothing binds in
    between)."""
    if has_identity_reductions(ctx, steps):
        return None
    levels = compact_levels(ctx, steps, steps.layers)
    if levels is None:
        return None
    keys = [_group_key(ctx, s) for s in steps]
    column_of: dict[int, LayerSteps] = {}
    for layer in steps.layers:
        for step in layer.steps:
            column_of[id(step)] = layer
    index = {id(s): i for i, s in enumerate(steps)}
    written: dict[tuple[int, str], list[Any]] = {}
    for layer in steps.layers:
        n = len(layer.table.rows)
        for step in layer.steps:
            key = keys[index[id(step)]]
            if key is None or key.kind not in _COLUMN_KINDS \
                    or not same_key_facts(ctx, layer, step, n, written):
                return None
    order = sorted(range(len(steps)), key=levels.__getitem__)  # stable within a level
    buckets: _Buckets = []
    for _lvl, members in itertools.groupby(order, key=levels.__getitem__):
        by_key: dict[GroupKey, list[Step | tuple[Step, LayerSteps]]] = {}
        singles: list[Step] = []
        for k in members:
            key, step = keys[k], steps[k]
            layer = column_of.get(id(step))
            if key is None:
                singles.append(step)
                continue
            bucket = by_key.setdefault(key, [])
            if layer is not None and bucket or bucket and type(bucket[0]) is tuple:
                return None  # a column shares its group: its members would interleave
            bucket.append(step if layer is None else (step, layer))
        buckets.append((singles, list(by_key.items())))
    return buckets, keys, written


def _emit_levels(em: Emitter, buckets: _Buckets, direct: dict[str, str], group: bool,
                 written: dict[tuple[int, str], list[Any]] | None = None) -> tuple[Lines, int]:
    """Emit each level of ``buckets`` (:func:`build_program`'s schedule, or a compact
    lowering's, :func:`_column_plan`): grouped, the level's copies first as one call
    (:func:`_copies`), then its single steps, then one group per key (a compact lowering's
    column as one group, its template's tensors first, then its rows', each list made in
    C-level sweeps over the column: no row step is made; ``written``: its rows' values where
    :func:`_column_plan` read them); the lines and how many grouped calls they are."""
    lines: Lines = []
    groups = 0
    for singles, batches in buckets:
        by_key = {key: batch for key, batch in batches if type(batch[0]) is not tuple}
        if group:
            merged, calls = _copies(em, by_key, singles, direct)  # type: ignore[arg-type]
            groups += calls
            lines += merged
        for step in singles:
            lines += _emit_single(em, step)
        for key, batch in batches:
            if type(batch[0]) is tuple:  # a column: its template's step and its layer
                step, layer = batch[0]  # type: ignore[misc]
                groups += 1
                lines += _emit_members(em, key, _column_members(em.ctx, step, layer, written))
            elif key not in by_key:  # taken into the level's one copy call
                continue
            elif len(batch) == 1:
                lines += _emit_single(em, batch[0])  # type: ignore[arg-type]
            else:
                groups += 1
                lines += _emit_group(em, key, batch)  # type: ignore[arg-type]
    return lines, groups


def _stage_out(em: Emitter, step: Step) -> tuple[Stage, torch.Tensor]:
    """What a SCALAR step copies into: its staging tensor, viewed in the input's shape where a
    one-element input of another shape is staged directly (``[1]`` into a 0-dim stage)."""
    stage = em.ctx.stage(step.target)
    meta = em.ctx.meta_of(step.input)
    if meta is None or meta.shape == stage.shape:
        return Stage(step.target), stage
    shape = tuple(meta.shape)
    return Stage(step.target, shape), stage.view(shape)


_COPY_KEY, _STAGE_KEY = GroupKey(GroupKind.COPY), GroupKey(GroupKind.STAGE)
#: the group kinds a compact lowering's column may take (an ``out=`` op's)
_COLUMN_KINDS = frozenset({GroupKind.UNARY, GroupKind.BINARY, GroupKind.SCALAR})


def _copies(em: Emitter, by_key: dict[GroupKey, list[Step]], singles: list[Step],
            direct: dict[str, str]) -> tuple[Lines, int]:
    """One ``_foreach_copy_`` for the level's copies, stages and dim-0 ``cat`` steps, taken out
    of ``by_key`` and ``singles`` when two of those kinds are present (a copy group that runs
    over flat buffers, :mod:`.flat`, keeps that path and is emitted here); the lines and how
    many grouped calls they are."""
    copies = by_key.get(_COPY_KEY, [])
    done: Lines = []
    flat_call = False
    if len(copies) > 1 and em.flat:
        done = _emit_flat(em, _COPY_KEY, _step_members(em.ctx, _COPY_KEY, copies),
                          copies) or []
        flat_call = bool(done)  # the copy group's own lines (one grouped call), first
        if done:
            del by_key[_COPY_KEY]
            copies = []
    stages = by_key.get(_STAGE_KEY, [])
    cats = [(s, rows) for s in singles if (rows := row_copies(em.ctx, s)) is not None]
    cats = [(s, rows) for s, rows in cats if em.locals.keys().isdisjoint(r.input for r in rows)]
    if sum(map(bool, (copies, stages, cats))) < 2:
        return done, int(flat_call)
    keys: list[Bound | OutView | RowsOf | Stage] = []
    values: list[torch.Tensor] = []
    ins: list[str] = []
    nodes: list[str] = []
    for s in copies:
        if s.out_shape is not None:
            em.out(s)
        else:
            em.list_members([s.target])
        keys.append(em.out_key(s))
        values.append(out_tensor(em.ctx, s))
        ins.append(s.input)
        nodes.append(s.target)
    for s, rows in cats:
        storage = out_tensor(em.ctx, s)
        for r in rows:
            keys.append(RowsOf(s.target, r.start, r.stop))
            values.append(storage.narrow(0, r.start, r.stop - r.start))
            ins.append(r.input)
        nodes.append(s.target)
    for s in stages:
        key, value = _stage_out(em, s)
        keys.append(key)
        values.append(value)
        ins.append(s.input)
        nodes.append(s.target)
    nodes += [n for n, src in direct.items() if src in ins]  # the reductions not run
    if copies:
        del by_key[_COPY_KEY]
    by_key.pop(_STAGE_KEY, None)
    taken = {id(s) for s, _ in cats}
    singles[:] = [s for s in singles if id(s) not in taken]
    outs = em.bindings.bind(TensorList(tuple(keys)), "copies", values)
    note = "; Python scalars set after the pass; NOT refillable: graph recapture required" \
        if stages else ""
    done.append((f"torch._foreach_copy_({outs}, {em.tensors(ins)})  # copies, rows of cat, "
                 f"stages: one call{note}", tuple(nodes)))
    return done, 1 + bool(flat_call)


def _emit_single(em: Emitter, step: Step) -> Lines:
    nodes = (step.target or step.node,)
    if step.action is Action.COMPUTE:
        var = em.bindings.fresh(f"t_{step.op}")
        em.locals[step.node] = var
        return [(f"{var} = {em.call(step.op, step.args, step.kwargs)}", (step.node,))]
    if step.action is Action.SCALAR:
        key, value = _stage_out(em, step)
        stage = em.bindings.bind(key, f"{step.target}_stage", value)
        return [(f"{stage}.copy_({em.operand(step.input)})  # {step.target}: a Python scalar set "
                 "after the pass; NOT refillable: graph recapture required", nodes)]
    out = em.out(step)
    if step.action is Action.COPY:
        return [(f"{out}.copy_({em.operand(step.input)})", nodes)]
    lines = [(em.call(step.op, step.args, step.kwargs, out), nodes)]
    if step.scale is not None:
        lines.append((f"{out}.mul_({em.value(step.scale)})", nodes))
    return lines


def _emit_group(em: Emitter, key: GroupKey, members: list[Step]) -> Lines:
    if key.kind is GroupKind.REDUCE:
        ins = em.tensors([s.args[0].id for s in members])
        names = []
        for s in members:
            names.append(em.bindings.fresh(f"t_{s.op}"))
            em.locals[s.node] = names[-1]
        return [(f"{', '.join(names)}, = torch.{_FOREACH_REDUCE[key.op]}({ins})",
                 tuple(s.node for s in members))]
    nodes = tuple(s.target for s in members)
    if key.kind is GroupKind.STAGE:
        outs = [_stage_out(em, s) for s in members]
        stages = em.bindings.bind(TensorList(tuple(k for k, _ in outs)), "stages",
                                  [v for _, v in outs])
        ins = em.tensors([s.input for s in members])
        return [(f"torch._foreach_copy_({stages}, {ins})  # Python scalars set after the pass; "
                 "NOT refillable: graph recapture required", nodes)]
    return _emit_members(em, key, _step_members(em.ctx, key, members), members)


class Members(NamedTuple):
    """A group's members as columns: the nodes each writes, the tensors it writes, its first
    operand (a copy's input), its second (``BINARY``; else empty); ``alike``: each column is
    one template node's, renamed (:meth:`Emitter.list_members`)."""

    targets: list[str]
    outs: list[torch.Tensor]
    a: list[str]
    b: list[str]
    alike: bool = False
    # the bound values of ``a`` and ``b`` where the caller holds them (else None: read them)
    a_values: list[Any] | None = None
    b_values: list[Any] | None = None


def _step_members(ctx: LowerContext, key: GroupKey, steps: list[Step]) -> Members:
    """:class:`Members` of a group of steps."""
    a = [s.input for s in steps] if key.kind is GroupKind.COPY \
        else [s.args[0].id for s in steps]
    b = [s.args[1].id for s in steps] if key.kind is GroupKind.BINARY else []
    return Members([s.target for s in steps], out_tensors(ctx, steps), a, b)  # type: ignore


def _column_members(ctx: LowerContext, step: Step, layer: LayerSteps,
                    written: dict[tuple[int, str], list[Any]] | None = None) -> Members:
    """:class:`Members` of a template's step and its rows' (a compact lowering's column: an
    ``out=`` op writing its own node, operands by position, :attr:`LayerSteps.compact`;
    ``written``: the rows' written values where :func:`_column_plan` read them already, for
    ``bound_values`` answers ref by ref: the targets' values are the template's, then those).
    An operand column's values are the template's, then its rows' as the layer proof read
    them where it kept them (:meth:`LayerSteps.kept_column_of`), else read when emitted."""
    def column(ref: str) -> list[str]:
        return [ref, *layer.column_of(ref)]

    def values(ref: str) -> list[Any] | None:
        rows = layer.kept_column_of(ctx, ref)
        return None if rows is None else [*ctx.bound_values([ref], _UNBOUND), *rows]

    targets = column(step.target)
    a_ref = step.args[0].id
    b_ref = step.args[1].id if len(step.args) > 1 and isinstance(step.args[1], NodeRef) \
        else None
    rows = None if written is None else written.get((id(layer.table), step.target))
    outs = ctx.bound_values(targets) if rows is None else \
        [*ctx.bound_values(targets[:1]), *rows]
    return Members(targets, outs, column(a_ref), [] if b_ref is None else column(b_ref), True,
                   values(a_ref), None if b_ref is None else values(b_ref))


def _emit_members(em: Emitter, key: GroupKey, m: Members, steps: list[Step] | None = None,
                  ) -> Lines:
    """A ``COPY``/``UNARY``/``BINARY``/``SCALAR`` group (``steps``: its steps, where one may
    write through a view; else every member writes its storage whole)."""
    flat = _emit_flat(em, key, m, steps) if em.flat else None
    return flat if flat is not None else _emit_foreach(em, key, m, steps)


def _emit_foreach(em: Emitter, key: GroupKey, m: Members, steps: list[Step] | None = None,
                  note: str = "") -> Lines:
    """The group as ``torch._foreach_*`` calls over prebuilt lists (``note``: a comment on its
    first line)."""
    nodes = tuple(m.targets)
    outs = em.outs(steps, m.outs) if steps is not None else \
        em.outs_of(m.targets, m.outs, m.alike)
    a = em.tensors(m.a, m.alike, m.a_values)
    tail = f"  # {note}" if note else ""
    lines = [(f"torch._foreach_copy_({outs}, {a}){tail}", nodes)]
    if key.kind is GroupKind.COPY:
        return lines
    if key.kind is GroupKind.UNARY:
        lines.append((f"torch.{_FOREACH_UNARY[key.op]}({outs})", nodes))
        if key.scale is not None:
            lines.append((f"torch._foreach_mul_({outs}, {em.value(key.scale)})", nodes))
    elif key.kind is GroupKind.BINARY:
        b = em.tensors(m.b, m.alike, m.b_values)
        lines.append((f"torch.{_FOREACH_BINARY[key.op]}({outs}, {b})", nodes))
    else:
        value = float.fromhex(key.scalar)
        lines.append((f"torch.{_FOREACH_BINARY[key.op]}({outs}, {em.value(value)})", nodes))
    return lines


_numel, _shape = torch.Tensor.numel, attrgetter("shape")


def _part(m: Members, start: int, end: int) -> Members:
    """Members ``[start, end)`` of ``m``."""
    def cut(values: list[Any] | None) -> list[Any] | None:
        return None if values is None else values[start:end]

    return Members(m.targets[start:end], m.outs[start:end], m.a[start:end], m.b[start:end],
                   m.alike, cut(m.a_values), cut(m.b_values))


class _RunFacts(NamedTuple):
    """What a group's flat run takes from the compile's layout book, read once for the group
    (and cut for each of its chunks): the outputs' dtype; the one shape of its outputs, of its
    first and of its second operands (the first's where it has none), each where a record
    proves them CPU row-major tensors of that dtype (None: not proved, read per tensor); the
    outputs' data addresses and storages where the book noted them (None: read per tensor);
    the first and the second operands' data addresses where the book noted them (each at
    offset 0 of its storage: :meth:`~derivgraph.column_layout.ColumnLayouts.data_addresses`;
    ``[]`` for a group with no second operand) and their records prove one shape (None: read
    per tensor)."""

    dtype: torch.dtype
    out: torch.Size | None
    a: torch.Size | None
    b: torch.Size | None
    out_ptrs: list[int] | None
    out_storages: list[Any] | None
    a_ptrs: list[int] | None = None
    b_ptrs: list[int] | None = None

    def cut(self, start: int, end: int) -> _RunFacts:
        """The facts of members ``[start, end)``."""
        ptrs, storages = self.out_ptrs, self.out_storages
        a_ptrs, b_ptrs = self.a_ptrs, self.b_ptrs
        return self._replace(out_ptrs=None if ptrs is None else ptrs[start:end],
                             out_storages=None if storages is None else storages[start:end],
                             a_ptrs=None if a_ptrs is None else a_ptrs[start:end],
                             b_ptrs=None if b_ptrs is None else b_ptrs[start:end])

    def in_ptrs(self) -> list[int] | None:
        """The operands' data addresses, the first then the second (``a + b``'s order), where
        the book noted both; else None."""
        a_ptrs, b_ptrs = self.a_ptrs, self.b_ptrs
        return None if a_ptrs is None or b_ptrs is None else a_ptrs + b_ptrs


def _run_facts(em: Emitter, got: ColumnFacts, values: list[Any], n: int) -> _RunFacts:
    """:class:`_RunFacts` of a group whose outputs' facts are ``got`` (their dtype taken) and
    operands' bound values ``values`` (first operands, then second)."""
    book, dtype = book_of(em.ctx), got.dtype
    assert dtype is not None
    a, b = values[:n], values[n:]
    a_shape = _proved(_column_facts(a, book), dtype)
    b_shape = _proved(_column_facts(b, book), dtype) if b else a_shape
    shape = _proved(got, dtype)
    proved_in = a_shape is not None and a_shape == b_shape  # (_emit_run's span_in by address)
    return _RunFacts(dtype, shape, a_shape, b_shape,
                     None if shape is None else _noted(book, got.values),
                     _noted(book, got.values, storages=True),
                     _noted(book, a) if proved_in else None,
                     (_noted(book, b) if b else []) if proved_in else None)


def _column_facts(values: list[Any], book: ColumnLayouts | None) -> ColumnFacts:
    """:class:`ColumnFacts` of an operand column; where the book holds all but its first
    value (a compact lowering's column: its template's, then its rows'), the first is admitted
    under the rows' record when its own facts, read now, are the record's
    (:meth:`~derivgraph.column_layout.ColumnLayouts.admit`)."""
    facts = ColumnFacts(values, book)
    if facts.record is None and book is not None and len(values) > 1:
        rest = ColumnFacts(values[1:], book).record
        if rest is not None and book.admit(values[0], rest):
            return ColumnFacts(values, book)
    return facts


def _noted(book: ColumnLayouts | None, tensors: list[Any], storages: bool = False) \
        -> list[Any] | None:
    """The data addresses of ``tensors`` the book noted (each at offset 0 of its storage: an
    entry column's storages, a source column of no offset:
    :meth:`~derivgraph.column_layout.ColumnLayouts.data_addresses`), or
    with ``storages`` their ``untyped_storage()`` (its startup record's:
    :meth:`~derivgraph.column_layout.ColumnLayouts.storages`), the column whole or after its
    template's (whose own is read); None where it noted none."""
    if book is None or not tensors:
        return None
    look = book.storages if storages else book.data_addresses
    noted = look(tensors)
    if noted is None and len(tensors) > 1:
        rest = look(tensors[1:])
        if rest is not None:
            first = tensors[0]
            return [_storages([first])[0] if storages else first.data_ptr(), *rest]
    return noted


def _storages(tensors: list[Any]) -> list[Any]:
    """``untyped_storage()`` of each of ``tensors`` (one sweep)."""
    return list(map(tensor_method(set(map(type, tensors)), "untyped_storage"), tensors))


def _operands(em: Emitter, m: Members) -> list[Any]:
    """The bound values of ``m``'s first operands, then its second (``_UNBOUND`` where none
    is): as the members hold them (:class:`Members`' ``a_values``/``b_values``), else read."""
    if m.a_values is not None and (not m.b or m.b_values is not None):
        return m.a_values + (m.b_values or [])
    return em.ctx.bound_values(m.a + m.b, _UNBOUND)


def _emit_chunks(em: Emitter, key: GroupKey, m: Members, values: list[Any],
                 facts: _RunFacts, numel: int | None, steps: list[Step] | None) -> Lines:
    """A group the flat path refuses only for its size (over :data:`flat.MAX_ELEMENTS`, its
    op, dtype and mean size taken) as consecutive chunks of its members (:func:`flat.chunks`;
    ``numel``: each output's where its record says), each put to :func:`flat.fits` and,
    unless its outputs' record proves them, to their contiguity, then emitted by
    :func:`_emit_run` (its every other check made on the chunk); a chunk refused runs as
    ``torch._foreach_*`` calls, that chunk alone, marked so in the source."""
    n = len(m.targets)
    numels = [numel] * n if numel is not None else list(map(_numel, m.outs))
    cuts = flat.chunks(numels)
    lines: Lines = []
    for i, (start, end) in enumerate(cuts, 1):
        part = f"chunk {i} of {len(cuts)} of a group of {n}, over flat.MAX_ELEMENTS"
        chunk = _part(m, start, end)
        total = numel * (end - start) if numel is not None else sum(numels[start:end])
        done = None
        if flat.fits(total, end - start) and (
                facts.out is not None or ColumnFacts(chunk.outs).contiguous):
            done = _emit_run(em, key, chunk, values[start:end] + values[n + start:n + end],
                             facts.cut(start, end), total, part)
        lines += done if done is not None else _emit_foreach(
            em, key, chunk, None if steps is None else steps[start:end],
            f"{part}: not on the flat path")
    return lines


def _proved(facts: ColumnFacts, dtype: torch.dtype) -> torch.Size | None:
    """The one shape of a column whose layout record proves CPU, row-major tensors of
    ``dtype``; None where it does not."""
    record = facts.record
    if record is None or not record.contiguous or record.device.type != "cpu" \
            or record.dtype != dtype:
        return None
    return record.shape


def _emit_flat(em: Emitter, key: GroupKey, members: Members,
               steps: list[Step] | None = None) -> Lines | None:
    """A group of many small CPU tensors as whole-buffer ops over the memory that holds them
    (:mod:`derivgraph.compiler.flat`: :func:`_emit_run`); a group over
    :data:`flat.MAX_ELEMENTS` alone, in chunks (:func:`_emit_chunks`; ``steps``: the
    group's, for a chunk's foreach form); None where that path does not apply."""
    kind = key.kind
    if kind is GroupKind.UNARY and key.op not in flat.EXACT_UNARY or kind in (
            GroupKind.BINARY, GroupKind.SCALAR) and key.op not in flat.EXACT_BINARY:
        return None
    n = len(members.targets)
    if n < flat.MIN_GROUP:
        return None
    # the outputs' facts first (a group they refuse is refused without its operands named or
    # read), each in one C-level sweep
    outs = members.outs
    got = ColumnFacts(outs, book_of(em.ctx))  # an entry column's: its record, proved once
    if not got.tensors or got.contiguous is False:
        return None
    dtype, total = got.dtype, got.numel
    if dtype not in (flat.COPY_DTYPES if kind is GroupKind.COPY else flat.OP_DTYPES) \
            or total > flat.MAX_MEAN * n:
        return None
    fits = flat.fits(total, n)
    if fits and not got.contiguous:  # (a group too large alone: its chunks are read so)
        return None
    if not em.locals.keys().isdisjoint(members.a) \
            or not em.locals.keys().isdisjoint(members.b):
        return None
    values = _operands(em, members)
    facts = _run_facts(em, got, values, n)
    if fits:
        return _emit_run(em, key, members, values, facts, total)
    record = got.record
    return _emit_chunks(em, key, members, values, facts,  # too many elements, and only that
                        None if record is None else record.numel, steps)


def _emit_run(em: Emitter, key: GroupKey, members: Members, values: list[Any],
              facts: _RunFacts, total: int, part: str = "") -> Lines | None:
    """:func:`_emit_flat`'s run of ``members`` (contiguous outputs of ``facts.dtype``,
    ``total`` elements; ``values``: the operands' bound values; ``part``: which chunk of its
    group it is): whole-buffer ops over the memory holding them, or None where an operand, a
    span or two outputs sharing memory refuse it."""
    kind, n, dtype = key.kind, len(members.targets), facts.dtype
    outs, shape = members.outs, facts.out
    a, b = values[:n], values[n:]
    if shape is not None and facts.a is not None and facts.b is not None:
        # the records prove every operand a tensor and every shape: compared once
        if facts.a != shape or torch.broadcast_shapes(facts.b, shape) != shape:
            return None
        shapes = [shape] * n
    else:
        if not all(map(isinstance, values, repeat(torch.Tensor))):
            return None
        shapes = list(map(_shape, outs))
        if any(map(ne, map(_shape, a), shapes)) or any(  # each distinct pair of shapes once
                torch.broadcast_shapes(t, s) != s for t, s in set(zip(map(_shape, b), shapes))):
            return None
    # runs the layout book proved CPU tensors of the outputs' dtype and one shape: their spans
    # and indices from their addresses alone (the outputs' as the book noted them)
    span_out = flat.span_of(outs) if shape is None else \
        flat.span_of_run(outs, dtype, shape, facts.out_ptrs)
    a_shape = facts.a
    proved_in = a_shape is not None and a_shape == facts.b
    span_in = flat.span_of_run(a + b, dtype, a_shape, facts.in_ptrs()) if proved_in \
        else flat.span_of(a + b)
    if span_out is None or span_in is None:
        return None
    # two outputs sharing memory are not independent steps (numpy's sort: one thread)
    if shape is None:
        at_out = span_out.index(outs)
        order = np.sort(at_out.numpy())
        if (order[1:] == order[:-1]).any():
            return None
    else:  # a proved run: by its addresses
        if not flat.disjoint(span_out.starts, math.prod(shape) * dtype.itemsize):
            return None
        at_out = span_out.index_run(0, n, shape)
    targets = tuple(members.targets)
    bind = em.bindings.bind
    # the pass holds every storage it addresses: none is freed while its addresses are bound
    noted = facts.out_storages  # the outputs' startup record's, else read
    bind(Flat("held", targets), "held",
         (_storages(outs) if noted is None else list(noted)) + _storages(values))
    mem_out = bind(Flat("span_out", targets), "out_mem", span_out.view)
    mem_in = bind(Flat("span_in", targets), "in_mem", span_in.view)
    out_at = bind(Flat("at_out", targets), "at", at_out)
    a_at = bind(Flat("at_a", targets, tuple(members.a)), "at",
                span_in.index_run(0, n, a_shape) if proved_in else span_in.index(a))
    buf = bind(Flat("buf", targets), "flat", torch.empty(total, dtype=dtype))
    what = f"the {n} tensors"
    tail = f" ({part})" if part else ""
    lines = [f"torch.index_select({mem_in}, 0, {a_at}, out={buf})  # {what} read, by "
             f"address{tail}"]
    if kind is GroupKind.UNARY:
        lines.append(f"torch.{key.op}({buf}, out={buf})")
        if key.scale is not None:
            lines.append(f"torch.mul({buf}, {em.value(key.scale)}, out={buf})")
    elif kind is GroupKind.BINARY:
        b_at = bind(Flat("at_b", targets, tuple(members.b)), "at",
                    span_in.index_run(n, 2 * n, a_shape, shapes[0]) if proved_in and shape
                    else span_in.index(b, shapes))
        buf_b = bind(Flat("buf_b", targets), "flat", torch.empty(total, dtype=dtype))
        lines += [f"torch.index_select({mem_in}, 0, {b_at}, out={buf_b})",
                  f"torch.{key.op}({buf}, {buf_b}, out={buf})"]
    elif kind is GroupKind.SCALAR:
        lines.append(f"torch.{key.op}({buf}, {em.value(float.fromhex(key.scalar))}, out={buf})")
    lines.append(f"{mem_out}.index_copy_(0, {out_at}, {buf})  # into {what}' startup storage")
    return [(line, targets) for line in lines]


def view_source(ctx: LowerContext, bindings: Bindings, ref: str) -> str:
    """How a bound view over a bound tensor was made, as the call that made it."""
    node = ctx.graph.nodes[ref]
    return Emitter(ctx, bindings).call(node.op, node.args, node.kwargs)

