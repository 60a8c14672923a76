"""Lower the graph to the steps of the reload pass.

:class:`Lowerer` (an :class:`~derivgraph.compiler.interpret.Interpreter`) turns every derived
tensor into a :class:`Step`: ``OUT`` (an op writing straight into the derived storage through
``out=``; ``1.0 / x`` becomes ``reciprocal(out=)``), ``COPY`` (``copy_`` of a value),
``COMPUTE`` (an intermediate) or ``SCALAR`` (a Python number, staged in a tensor). Decisions
made once here, never per run:

* constants that depend on no source (``full([E], K)``) were computed at compile and are left
  out of the pass;
* tensors are resolved at compile: sources, derived storage and views over them are *bound*
  (globals of the generated code), re-resolved only when a holder was rebuilt;
* per-source cones are known (:meth:`derivgraph.runtime.plan.Plan.run` with ``updated=``).

The lowering knows no plan: it reads the bound tensors through a :class:`LowerContext`.
:mod:`derivgraph.compiler.codegen` schedules, groups and emits the steps as Python.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, repeat
from operator import attrgetter, eq, is_
from typing import Any, Protocol

import torch

from derivgraph._enum import StrEnum
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, NodeRef, refs_in, substitute
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.interpret import Interpreter
from derivgraph.compiler.ir import NodeKind, calls_of
from derivgraph.compiler.layers import order_without_rows
from derivgraph.compiler.lower_layers import kept_column, provable_layers
from derivgraph.ops import OPS, OpKind
from derivgraph.spec.kinds import TensorKind

__all__ = ["WRITES", "Action", "LayerSteps", "LowerContext", "LoweredSteps", "Lowerer", "Step",
           "is_bound", "lower_steps", "out_tensor", "pass_writes", "reads_storage_of", "select",
           "selected"]

_RESHAPES = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze"})
# ops that only copy their input when it lands in contiguous storage of the same dtype (a cast
# only when it keeps the dtype): a step writing derived storage skips them (no temporary)
_LAYOUT_COPIES = frozenset({"contiguous", "clone", "cast"})


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
    out_shape: tuple[int, ...] | None = None  # OUT through a reshape: write a view of storage

    def reads(self) -> list[str]:
        """The node ids this step reads."""
        return refs_in(self.args) + refs_in(self.kwargs) + ([self.input] if self.input else [])

    def renamed(self, names: dict[str, str]) -> Step:
        """This step of a template, for the stamped layer whose nodes ``names`` maps the
        template's to (a node not in ``names``, a shared constant, keeps its id)."""
        get = names.get

        def ref(node_id: str) -> NodeRef:
            return NodeRef(get(node_id, node_id))

        return Step(get(self.node, self.node), self.action, self.op,
                    substitute(self.args, ref), substitute(self.kwargs, ref),
                    None if self.input is None else get(self.input, self.input),
                    get(self.target, self.target), self.scale, self.out_shape)


@dataclass(frozen=True, eq=False)
class LayerSteps:
    """The steps of a table's rows, made from its template's (:meth:`Lowerer.lower`): the
    template's recipe (:meth:`Lowerer._recipe`: per step, where each row's arguments and input
    come from). :attr:`columns` makes each row's step (the template's renamed, in the table's
    row order) on first read; a compact lowering (:attr:`LoweredSteps.compact`) never reads it
    on the compile path: code generation takes the rows as columns of node ids
    (:meth:`column_of`). Code generation reuses the template's schedule for these
    (:mod:`derivgraph.compiler.schedule_layers`), finding them by identity in a step list."""

    table: InstanceTable
    recipes: tuple[_Recipe, ...]
    nodes: Any  # the graph's nodes (id -> node): the rows' ops, for their arguments
    # the meta env (id -> meta value) in which the layer proof found every row's meta values
    # to be the template's, position by position (None: not proved; an env is replaced, never
    # changed in place: :func:`~derivgraph.compiler.schedule_layers.same_key_facts`)
    metas: Any = None
    # the bound values the layer proof read of the rows' columns, during a compile (None: not
    # kept; :func:`~derivgraph.compiler.lower_layers.kept_column` says where they hold)
    values: Any = None

    @property
    def steps(self) -> tuple[Step, ...]:
        """The template's steps, in its order."""
        return tuple(r[1] for r in self.recipes)

    @property
    def compact(self) -> bool:
        """Whether every row's step is an ``out=`` op whose operands follow from its
        template's by position (:meth:`column_of`): no keyword, no view written, no argument
        renamed one by one."""
        return all(at is not None and step.action is Action.OUT and not step.kwargs
                   and step.out_shape is None for _i, step, at, _tail, _inp in self.recipes)

    def column_of(self, ref: str) -> list[str]:
        """Node ``ref`` of the template as each row's node: its column, or ``ref`` itself in
        every row (a node the rows share)."""
        where = self._where
        return self.table.column(where[ref]) if ref in where \
            else [ref] * len(self.table.rows)

    def kept_column_of(self, ctx: LowerContext, ref: str) -> list[Any] | None:
        """The rows' bound values at template node ``ref`` (``ctx.bound_values`` of its
        :meth:`column_of`) as the layer proof read them, where they still hold
        (:func:`~derivgraph.compiler.lower_layers.kept_column`); None where ``ref`` is no
        template node or they were not kept or do not hold (read them again)."""
        k = self._where.get(ref)
        return None if k is None else kept_column(ctx, self.values, k)

    @cached_property
    def _where(self) -> dict[str, int]:
        return {t: k for k, t in enumerate(self.table.template)}

    @cached_property
    def columns(self) -> tuple[tuple[Step, list[Step]], ...]:
        """Per step of the template, that step and the step each row takes for it."""
        rows = self.table.rows
        return tuple((recipe[1], self._made(recipe, rows)) for recipe in self.recipes)

    def _made(self, recipe: _Recipe, rows: list[tuple[str, ...]]) -> list[Step]:
        """The step each of ``rows`` (rows of the table) takes for a template's step."""
        i, step, at, tail, inp = recipe
        template, nodes = self.table.template, self.nodes
        if at is None:  # arguments of another shape: renamed one by one
            return [step.renamed(dict(zip(template, ids))) for ids in rows]
        column = [row[i] for row in rows]
        action, op, scale, out_shape = step.action, step.op, step.scale, step.out_shape
        targets = column if step.target else [""] * len(rows)
        inputs = [row[inp] for row in rows] if inp >= 0 else [step.input] * len(rows)
        if at < 0:
            args, kwargs = step.args, step.kwargs
            return [Step(n, action, op, args, kwargs, x, t, scale, out_shape)
                    for n, x, t in zip(column, inputs, targets)]
        calls = calls_of([nodes[row[at]] for row in rows])  # held nodes left held
        return [Step(n, action, op, (args[1],) if tail else args, kwargs, x, t, scale,
                     out_shape)
                for n, (args, kwargs), x, t in zip(column, calls, inputs, targets)]

    def steps_of(self, nodes: Collection[str]) -> list[Step]:
        """The rows' steps whose node is in ``nodes`` (a compact layer: each writes its own
        node), made for those rows only, in no particular order."""
        out: list[Step] = []
        rows = self.table.rows
        for recipe in self.recipes:
            column = self.table.column(recipe[0])
            hit = [rows[r] for r, n in enumerate(column) if n in nodes]
            if hit:
                out += self._made(recipe, hit)
        return out


#: the actions whose target's storage a step writes
WRITES = frozenset({Action.OUT, Action.COPY})
#: the derived kinds no step writes: bound to another tensor, or a Python number staged
_NOT_WRITTEN = frozenset({TensorKind.ALIAS, TensorKind.VIEW, TensorKind.SCALAR})


def pass_writes(node: DerivedNode, deps: Mapping[str, frozenset[str]]) -> bool:
    """Whether the lowered pass writes derived tensor ``node``'s storage whole, by one
    :data:`WRITES` step (``out=`` into it, or a view of all of it, or ``copy_``): a tensor of
    its own (no alias, view or Python scalar) computed from an input that depends on a
    source (``deps``: :meth:`~derivgraph.compiler.graph.DerivedGraph.source_deps`; a
    constant is computed at compile, never again). The rule :class:`Lowerer` lowers each
    derived tensor by; a stamped row takes its template's step."""
    return node.kind not in _NOT_WRITTEN and node.input is not None and bool(deps[node.id])

_NODE = attrgetter("node")


def selected(steps: Iterable[Step], nodes: Collection[str]) -> list[Step]:
    """The steps whose node or target is in ``nodes``, in order (the one selection rule of a
    partial pass)."""
    return [s for s in steps if s.node in nodes or s.target in nodes]


def select(steps: list[Step], nodes: Collection[str]) -> list[Step]:
    """:func:`selected` over a lowering: a :class:`LoweredSteps` makes a compact lowering's
    rows only where selected."""
    return steps.select(nodes) if isinstance(steps, LoweredSteps) else selected(steps, nodes)


class LoweredSteps(list[Step]):
    """The steps of a lowering, with the stamped tables whose rows took their template's steps
    (``layers``; empty when every node was lowered on its own).

    A *compact* lowering (``order``: every step's node, the rows' included, in topological
    order) holds every step but the rows' (each layer's :attr:`LayerSteps.compact`):
    :meth:`expanded` is the full list, made on first call (the same steps in the same order
    as a lowering that made every row's)."""

    def __init__(self, steps: Iterable[Step] = (), layers: tuple[LayerSteps, ...] = (),
                 order: list[str] | None = None):
        super().__init__(steps)
        self.layers = layers
        self._order = order
        self._full: LoweredSteps | None = None
        self._written: list[str] | None = None

    @property
    def compact(self) -> bool:
        """Whether the stamped rows' steps are left out (held as their layers' columns)."""
        return self._order is not None

    def expanded(self) -> LoweredSteps:
        """Every step, the rows' included, in topological order (this list if not compact)."""
        if self._order is None:
            return self
        if self._full is None:
            made = dict(zip(map(_NODE, self), self))
            for layer in self.layers:
                for _step, column in layer.columns:
                    made.update(zip(map(_NODE, column), column))
            self._full = LoweredSteps(map(made.__getitem__, filter(made.__contains__,
                                                                   self._order)), self.layers)
        return self._full

    def select(self, nodes: Collection[str]) -> list[Step]:
        """The steps of :meth:`expanded` whose node or target is in ``nodes``, in its order (a
        compact lowering's rows made only where selected)."""
        if self._order is None or self._full is not None:
            return selected(self.expanded(), nodes)
        picked = {s.node: s for s in selected(self, nodes)}
        for layer in self.layers:
            picked.update(zip(map(_NODE, made := layer.steps_of(nodes)), made))
        return list(map(picked.__getitem__, filter(picked.__contains__, self._order)))

    def count(self) -> int:
        """``len(self.expanded())``, without making the rows' steps."""
        if self._order is None or self._full is not None:
            return len(self.expanded())
        return len(self) + sum(len(layer.table.rows) * len(layer.recipes)
                               for layer in self.layers)

    def written(self) -> list[str]:
        """The targets of the ``OUT``/``COPY`` steps of :meth:`expanded`, in its order (a
        compact lowering's rows read off their columns: each writes its own node; made once,
        a copy returned)."""
        if self._written is None:
            if self._order is None or self._full is not None:
                self._written = [s.target for s in self.expanded() if s.action in WRITES]
            else:
                target = {s.node: s.target for s in self if s.action in WRITES}
                if len(target) == len(self) and all(map(eq, target, target.values())):
                    # every step writes its own node, and so does every row: all of them
                    # (the order list itself: both are read only, a copy is returned)
                    self._written = self._order
                    return list(self._written)
                for layer in self.layers:
                    for step in layer.steps:  # compact: OUT steps writing their own node
                        column = layer.column_of(step.node)
                        target.update(zip(column, column))
                self._written = list(map(target.__getitem__,
                                         filter(target.__contains__, self._order)))
        return list(self._written)

    def targets(self) -> Iterable[str]:
        """The target of every step but the intermediates (``COMPUTE``), rows included, in
        no particular order (a compact lowering's rows read off their columns)."""
        own = [s.target for s in self if s.action is not Action.COMPUTE]
        if self._order is None:
            return own
        return chain(own, chain.from_iterable(layer.column_of(step.node)
                                              for layer in self.layers for step in layer.steps))


class LowerContext(Protocol):
    """What lowering and code generation read of the bound tensors (a plan implements it)."""

    graph: DerivedGraph
    meta_env: dict[str, Any]  # node id -> its inferred meta value

    def meta_of(self, ref: Any) -> torch.Tensor | None:
        """The inferred meta tensor of a node (id or NodeRef), None when not a tensor."""

    def storage_of(self, node_id: str) -> Any:
        """A derived tensor's storage (its startup object)."""

    def bound(self, ref: str) -> Any:
        """The tensor bound at compile for node ``ref``; KeyError when it is not bound."""

    def bound_values(self, refs: Iterable[str], missing: Any = None) -> list[Any]:
        """:meth:`bound` of each ref, ``missing`` where nothing is bound."""

    def storage_ptrs(self, ref: str) -> set[int]:
        """The storage addresses a bound node's tensor lives in (empty when not bound)."""

    def stage(self, target: str) -> torch.Tensor:
        """The staging tensor of the derived Python scalar ``target``."""


def is_bound(ctx: LowerContext, ref: str) -> bool:
    """Whether node ``ref`` has a tensor bound at compile."""
    try:
        ctx.bound(ref)
    except KeyError:
        return False
    return True


_OUT_SHAPE, _TARGET = attrgetter("out_shape"), attrgetter("target")


def out_tensor(ctx: LowerContext, step: Step) -> torch.Tensor:
    """The tensor an ``OUT``/``COPY`` step writes: the storage, or a view of it."""
    storage = ctx.storage_of(step.target)
    return storage if step.out_shape is None else storage.view(step.out_shape)


def out_tensors(ctx: LowerContext, steps: list[Step]) -> list[torch.Tensor]:
    """:func:`out_tensor` of each of ``steps``; one C-level sweep of the storages when no step
    writes through a view (the common case of a large group)."""
    if all(map(is_, map(_OUT_SHAPE, steps), repeat(None))):
        return list(map(ctx.storage_of, map(_TARGET, steps)))
    return [out_tensor(ctx, s) for s in steps]


def reads_storage_of(ctx: LowerContext, node_id: str, out: torch.Tensor) -> bool:
    """True if an argument of op ``node_id`` is (a view of) ``out``'s storage.

    Writing ``out=`` into a tensor the op also reads is undefined (torch refuses overlapping
    memory), so such a step computes into a temporary and copies instead.
    """
    nodes = ctx.graph.nodes
    target = out.untyped_storage().data_ptr()
    for ref in refs_in(nodes[node_id].args):
        node = nodes[ref]
        while node.kind is NodeKind.OP and OPS[node.op].kind is OpKind.VIEW:
            node = nodes[node.inputs[0]]
        if node.kind is NodeKind.OP:
            continue
        if target in ctx.storage_ptrs(node.id):
            return True
    return False


class Lowerer(Interpreter):
    """Walks the graph once and emits :class:`Step` s; constants and views are bound, not run."""

    def __init__(self, ctx: LowerContext):
        super().__init__(ctx.graph)
        self.ctx = ctx
        self.deps = ctx.graph.source_deps()
        self.users = ctx.graph.ir.users
        self.steps: list[Step] = []
        self.fused: set[str] = set()
        self.producers: dict[str, str] = {}  # an OUT step's target -> the op it runs

    def lower(self) -> LoweredSteps:
        """Every step in topological order; a stamped layer whose facts are its template's
        (:func:`~derivgraph.compiler.lower_layers.provable_layers`) takes the template's
        steps renamed, every other node is lowered here. Where every such layer is
        :attr:`LayerSteps.compact` and its rows come in the table's order, template first
        (:func:`_step_order`), the rows' steps are left out (a compact lowering)."""
        graph = self.graph
        nodes, derived = graph.nodes, graph.derived_view
        env = self.ctx.meta_env  # what the layer proof reads the meta values from
        kept: dict[int, Any] = {}  # a proven table's id -> the bound values its proof read
        tables = provable_layers(self.ctx, kept)
        order = graph.ordered()
        rest = order_without_rows(graph, tables)  # cut at the order's spans where it can
        for node_id in rest:
            if nodes[node_id].kind is NodeKind.DERIVED:
                self._derived(derived[node_id])
        by_target = {s.target: s for s in self.steps}
        chosen: dict[str, Step] = {}
        for node_id in rest:
            node = nodes[node_id]
            if node.kind is NodeKind.OP:
                if node_id in self.fused or not self.deps[node_id] \
                        or is_bound(self.ctx, node_id) \
                        or _only_feeds_views(graph, self.users, node_id):
                    continue
                chosen[node_id] = Step(node_id, Action.COMPUTE, node.op, node.args, node.kwargs)
            elif node_id in by_target:
                chosen[node_id] = by_target[node_id]
        if not tables:
            return LoweredSteps(chosen.values())
        layers = tuple(LayerSteps(table, tuple(self._recipe(table.template, chosen)), nodes,
                                  env, kept.get(id(table)))
                       for table in tables)  # one recipe per template
        steps_order = _step_order(order, chosen, layers, graph.ir.spanned()) \
            if all(layer.compact for layer in layers) else None
        if steps_order is not None:  # the rows' steps are made on demand (expanded)
            return LoweredSteps(map(chosen.__getitem__, filter(chosen.__contains__,
                                                               steps_order)),
                                layers, steps_order)
        for layer in layers:  # each step made for a whole column
            for _step, made in layer.columns:
                chosen.update(zip(map(_NODE, made), made))
        return LoweredSteps(map(chosen.__getitem__, filter(chosen.__contains__, order)),
                            layers)

    def _recipe(self, template: tuple[str, ...], chosen: dict[str, Step]) -> list[_Recipe]:
        """Per step of a template: its position, the step, the position of the op whose
        arguments it takes (-1: none; None: renamed one by one), whether it takes only the
        second of them (``c / x`` as ``reciprocal(x)``), and its input's position (-1: a
        node every layer shares)."""
        where = {t: i for i, t in enumerate(template)}
        nodes, out = self.graph.nodes, []
        for i, t in enumerate(template):
            step = chosen.get(t)
            if step is None:
                continue
            src = t if step.action is Action.COMPUTE else self.producers.get(t)
            at: int | None = -1
            tail = False
            if src is not None:
                node, at = nodes[src], where.get(src)
                tail = step.args is not node.args
                if at is None or step.kwargs is not node.kwargs or \
                        (tail and step.args != (node.args[1],)):
                    at = None
            elif step.args or step.kwargs:
                at = None
            inp = -1 if step.input is None else where.get(step.input, -1)
            if step.input is not None and inp < 0 and step.input in self.graph.derived_ids:
                at = None  # a derived tensor outside the layer: renamed as a path
            out.append((i, step, at, tail, inp))
        return out

    def _derived(self, node: DerivedNode) -> None:
        if node.kind is TensorKind.SCALAR:
            if node.input is not None:
                self.steps.append(Step(node.id, Action.SCALAR, input=node.input, target=node.id))
            return
        if not pass_writes(node, self.deps):
            return  # an alias, a view, an opaque engine tensor or a constant (computed once)
        storage = self.ctx.storage_of(node.id)
        producer, out_shape = self._out_producer(node, storage)
        if producer is not None and not reads_storage_of(self.ctx, producer, storage):
            p = self.graph.nodes[producer]
            args, op, scale = p.args, p.op, None
            if p.op == "div" and not refs_in(args[:1]) and refs_in(args[1:2]) \
                    and isinstance(args[0], float) and storage.dtype.is_floating_point:
                op, args, scale = "reciprocal", (args[1],), (None if args[0] == 1.0
                                                              else args[0])
                if not self._is_float_ref(args[0], storage.dtype):
                    op = None
            if op is not None and (op == "reciprocal" or refs_in(args[:1])):
                self.fused.add(producer)
                self.producers[node.id] = producer
                self.fused.update(self._chain_between(node.input, producer))
                self.steps.append(Step(node.id, Action.OUT, op, args, p.kwargs, input=None,
                                       target=node.id, scale=scale, out_shape=out_shape))
                return
        self.steps.append(Step(node.id, Action.COPY, input=self._copy_input(node.input, node.id),
                               target=node.id))

    def _is_float_ref(self, ref: Any, dtype: torch.dtype) -> bool:
        meta = self.ctx.meta_of(ref) if isinstance(ref, NodeRef) else None
        return meta is not None and meta.dtype == dtype

    def _is_layout_copy(self, node_id: str) -> bool:
        """A contiguous/clone, or a cast that keeps the dtype: its value is its input's."""
        cur = self.graph.nodes[node_id]
        if cur.kind is not NodeKind.OP or cur.op not in _LAYOUT_COPIES or not cur.inputs \
                or refs_in(cur.args[1:]) or refs_in(cur.kwargs):
            return False
        if cur.op != "cast":
            return True
        a, b = self.ctx.meta_of(cur.inputs[0]), self.ctx.meta_of(node_id)
        return a is not None and b is not None and a.dtype == b.dtype

    def _copy_input(self, value: str, user: str) -> str:
        """The value a COPY reads: ``copy_`` takes any layout, so layout copies are skipped
        (never onto a value over the target's own storage: copy_ needs no overlap)."""
        target = self.ctx.storage_of(user)
        ptr = target.untyped_storage().data_ptr() if isinstance(target, torch.Tensor) else None
        skipped = []
        while self._is_layout_copy(value) and self.users[value] == [user]:
            inner = self.graph.nodes[value].inputs[0]
            if ptr is not None and ptr in self.ctx.storage_ptrs(inner):
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

    def _out_producer(self, node: DerivedNode, storage: Any) -> tuple[str | None, Any]:
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
        if op.kind is not OpKind.COMPUTE or op.out is None:
            return None, None
        shape = None
        if reshaped:
            meta = self.ctx.meta_of(cur.id)
            if meta is None or meta.numel() != storage.numel() or meta.dtype != storage.dtype:
                return None, None
            shape = tuple(meta.shape)
        return cur.id, shape


#: (position, template step, position of its op or -1 / None, second argument only, input)
_Recipe = tuple[int, Step, "int | None", bool, int]


def _step_order(order: list[str], chosen: dict[str, Step],
                layers: Sequence[LayerSteps],
                chunks: Sequence[tuple[int, int]] = ()) -> list[str] | None:
    """The node of every step (``chosen``'s and each layer's rows') in ``order``, when each
    layer's step nodes come in it a row at a time, the template's row first, then the
    table's rows in its order, each in the template's step order (then a column of the rows'
    steps, template first, is in the order a full lowering lists them); else None.
    ``chunks``: where the order took its spans (:meth:`~derivgraph.compiler.ir.Graph.spanned`):
    the steps' nodes in one layer's chunk are read by its columns
    (:func:`_members_spanned`), not filtered node by node."""
    cols = [{s.node: [s.node, *layer.column_of(s.node)] for s in layer.steps}
            for layer in layers]
    mines = [set(chain.from_iterable(col.values())) for col in cols]  # each layer's nodes
    seen = None
    if len(mines) == 1 and mines[0].issuperset(chosen):
        members = mines[0]  # the one layer's nodes hold every chosen one (its template's)
        seen = _members_spanned(order, members, layers[0].table, chunks)
    else:
        members = set(chosen).union(*mines)
    if seen is None:
        seen = list(filter(members.__contains__, order))
    for col, mine in zip(cols, mines):
        layer_seen = seen if len(mine) == len(seen) else list(filter(mine.__contains__, seen))
        first = layer_seen[:len(col)]
        if set(first) != col.keys() or \
                layer_seen != list(chain.from_iterable(zip(*map(col.__getitem__, first)))):
            return None
    return seen


def _members_spanned(order: list[str], members: set[str], table: InstanceTable,
                     chunks: Sequence[tuple[int, int]]) -> list[str] | None:
    """``[n for n in order if n in members]`` (``members``: the steps' nodes of ``table``'s
    template and of its rows, each in ``order`` once, as a topological order lists every node),
    read by ``table``'s columns where a chunk ``(start, stop)`` of ``order`` holds its rows a
    row at a time, every row's nodes at the same offsets: ``stop - start`` is rows times the
    template's width, and each column is ``order[start + offset:stop:width]`` (its offset:
    where its first row's node is in the first row's block; one C-level comparison per
    column). The columns whose first node is a member are the steps' (every member in the
    chunk is at their offsets); the rest of ``order`` is filtered. None where no chunk holds
    the rows so, or the members found are not all of ``members``."""
    n, columns = len(table), table.columns()
    width = len(columns)
    if n < 2 or not width:
        return None
    for start, stop in chunks:
        if stop - start != n * width:
            continue
        block = {node: at for at, node in enumerate(order[start:start + width])}
        offsets = [block.get(column[0], -1) for column in columns]
        if -1 in offsets or len(set(offsets)) != width or any(
                order[start + at:stop:width] != column for at, column in zip(offsets, columns)):
            continue
        steps = sorted(at for at, column in zip(offsets, columns) if column[0] in members)
        before = list(filter(members.__contains__, order[:start]))
        after = list(filter(members.__contains__, order[stop:]))
        if len(before) + n * len(steps) + len(after) != len(members):
            return None
        inside = chain.from_iterable(zip(*[order[start + at:stop:width] for at in steps]))
        return [*before, *inside, *after]
    return None


def _only_feeds_views(graph: DerivedGraph, users: dict[str, list[str]], node_id: str) -> bool:
    succ = users[node_id]
    return bool(succ) and all(
        (s in graph.derived and graph.derived[s].kind is TensorKind.VIEW)
        or (graph.nodes[s].kind is NodeKind.OP and _only_feeds_views(graph, users, s))
        for s in succ
    )


def lower_steps(ctx: LowerContext) -> LoweredSteps:
    """Every per-node step of the full pass, in topological order (with the stamped tables
    whose rows took their template's steps)."""
    return Lowerer(ctx).lower()
