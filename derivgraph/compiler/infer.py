"""Shape, dtype and device inference on ``meta`` tensors, and declared-vs-inferred checks.

Every op runs on meta tensors (:class:`~derivgraph.compiler.interpret.MetaInterpreter`, memoized
per op
and input layout), so a spec's shapes and dtypes are checked without touching real data.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, compress, filterfalse, repeat
from operator import attrgetter, is_, itemgetter, mul
from typing import Any

import torch

from derivgraph.compiler.bind import paths_of
from derivgraph.compiler.engine import engine_meta
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, HeldDerived
from derivgraph.compiler.instances import InstanceTable, run_column
from derivgraph.compiler.interpret import Failed, MetaInterpreter
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.layers import closed_layers, layer_nodes, order_without_rows
from derivgraph.compiler.replay import Twins
from derivgraph.compiler.row_deps import KeptAside
from derivgraph.errors import IndexOutOfRange, LimitError, Rule
from derivgraph.limits import LIMITS, check_budget, check_bytes, check_numel
from derivgraph.ops import DTYPES
from derivgraph.spec.kinds import HELD_KINDS, TensorKind, is_engine

__all__ = ["first_feeds", "infer_shapes", "meta_value", "rows_hold_metas"]


def meta_value(graph: DerivedGraph, node_id: str, cache: dict[str, Any]) -> Any:
    """The node's value on the meta device (shapes and dtypes only); ``cache`` is the env."""
    interp = MetaInterpreter(graph)
    interp.env = cache
    order = graph.ordered()
    interp.run(order[: order.index(node_id) + 1])
    return cache[node_id]


class _StampedMeta(MetaInterpreter):
    """Meta values where a stamped op takes its template op's value: same op and constants
    (the stamp replays the call), and here checked: inputs whose meta values have the same
    layouts, so the memoized meta call would give that value. Only a tensor is taken; a
    failure is computed again, so each layer reports its own."""

    def __init__(self, graph: DerivedGraph, twins: dict[str, str]):
        super().__init__(graph)
        self.twins = twins
        # a held run's twins are put in the dict when one of its ops is looked up
        self._twin = twins.finder() if isinstance(twins, Twins) else twins.get

    def run_node(self, node: Any) -> Any:
        twin = self._twin(node.id)
        if twin is not None:
            value = self.env.get(twin)
            if isinstance(value, torch.Tensor) and self._same_inputs(
                    node.inputs, self.graph.nodes[twin].inputs):
                return value
        return super().run_node(node)

    def _same_inputs(self, mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
        env = self.env
        if len(mine) != len(theirs):
            return False
        for a, b in zip(mine, theirs, strict=True):
            x, y = env.get(a), env.get(b)
            if x is y and x is not None:
                continue
            if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or \
                    (x.shape, x.stride(), x.dtype) != (y.shape, y.stride(), y.dtype):
                return False
        return True


def infer_shapes(graph: DerivedGraph, twins: dict[str, str] | None = None,
                 run_nodes: Mapping[int, tuple[Any, ...]] | None = None) -> None:
    """Infer every derived tensor's meta value and check it against its declaration.

    A derived tensor whose formula reads another that did not resolve is skipped: the issue
    already reported for that one is the real problem. ``twins`` maps stamped op nodes to the
    template ops they copy (:mod:`derivgraph.compiler.stamp`; a
    :class:`~derivgraph.compiler.replay.Twins` puts a held column run's in when one of its ops
    is looked up); valid only for the layouts the graph was built with. ``run_nodes``: the
    stamper's tables whose rows are one run's, with each row's derived tensors by column
    (:attr:`Stamper.run_nodes <derivgraph.compiler.stamp.Stamper.run_nodes>`), read instead
    of looking the rows' ids up where the table is still that one.
    """
    interp = _StampedMeta(graph, {} if twins is None else twins)
    if any(is_engine(column.decl) for column in graph.held_columns()):
        graph.derived  # noqa: B018  (their nodes made: each row is read below)
    made = graph.made_derived()  # a held column's rows: no engine hook
    no_input = map(is_, map(_input_of, map(_SECOND, made)), repeat(None))
    for node_id, node in compress(made, no_input):
        if is_engine(node.decl):  # engine hook: the engine's layout
            try:
                interp.env[node_id] = engine_meta(graph.model, node_id)
            except ValueError:
                pass  # reported as DG082 when the plan adopts the tensor
    stamped = _run_stamped(graph, interp, run_nodes)
    env = graph.meta_env = interp.env
    _check_limits(graph, env, stamped)
    devices = _source_devices(graph, stamped.rest)
    issues = len(graph.issues)
    clean = _check_all(graph, env, devices, {}, defer=True,
                       rest=stamped.unstamped(graph.derived_ids))
    if all(t in clean for t in stamped.templates()):
        _take_templates(graph, env, stamped, clean)
        return
    del graph.issues[issues:]  # a template had an issue: each row in its place, in order
    _check_all(graph, env, devices, stamped.derived, defer=False)


def _check_all(graph: DerivedGraph, env: dict[str, Any], devices: dict[str, frozenset[Any]],
               stamped: dict[str, str], defer: bool,
               rest: list[str] | None = None) -> dict[str, Any]:
    """Check every derived tensor and give it its meta value, in order; each one checked
    without an issue -> its device. A stamped row's (``stamped``: -> its template's) is
    left out (``defer``) or takes its template's when that was clean. Checking one again
    gives the same issues and values. ``rest``: with ``defer``, the derived tensors that are
    no stamped row's, in order (:meth:`_Stamped.unstamped`; then ``stamped`` is not read)."""
    reported: set[int] = set()
    clean: dict[str, Any] = {}
    items: Iterable[tuple[str, DerivedNode]]
    if defer and rest is not None:  # the stamped rows left out (no held node made)
        items = zip(rest, map(graph.derived_view.__getitem__, rest))
    else:
        derived = graph.derived
        items = derived.items()
        if defer and stamped:  # the stamped rows left out, in one C-level sweep
            rest = list(filterfalse(stamped.__contains__, derived))
            items = zip(rest, map(derived.__getitem__, rest))
    for node_id, node in items:
        twin = stamped.get(node_id)
        if twin is not None:
            if defer:
                continue
            if twin in clean:  # the template's value, inputs and declaration
                node.meta, node.device = env[node_id], clean[twin]
                continue
        issues = len(graph.issues)
        if node.input is None:
            if isinstance(env.get(node_id), torch.Tensor):  # engine hook: seeded above
                node.meta = env[node_id]
            continue
        value = env[node_id]
        if isinstance(value, Failed):
            # an error anywhere below the top op, reported once (at the first derived tensor)
            if value.error is not None and id(value) not in reported:
                reported.add(id(value))
                first = str(value.error).strip().split("\n")[0]
                rule = Rule.INDEX_OUT_OF_RANGE if isinstance(value.error, IndexOutOfRange) \
                    else Rule.INFERENCE
                graph.issue(rule, f"formula {node.decl.formula or node.decl.of!r} fails "
                            f"on shapes/dtypes: {first}",
                            "check the shapes, dtypes and indices the formula combines", node)
            continue
        if not isinstance(value, torch.Tensor):
            graph.issue(Rule.INFERENCE, f"formula gives a {type(value).__name__}, not a tensor",
                        "make the formula produce a tensor", node)
            continue
        node.meta = value
        _check_declared(graph, node, value, devices[node_id])
        if len(graph.issues) == issues:
            clean[node_id] = node.device
    return clean


def _take_templates(graph: DerivedGraph, env: dict[str, Any], stamped: _Stamped,
                    clean: dict[str, Any]) -> None:
    """Each stamped row's derived tensors take their template's meta value and device (the
    template's value, inputs and declaration, checked without an issue), a column at a
    time."""
    for table in stamped.tables:
        template = table.template
        for k, t in enumerate(template[:stamped.leading[template]]):
            column = stamped.derived_column(table, k, graph.derived_view)
            _set_all(column, "meta", env[t])
            _set_all(column, "device", clean[t])


def _set_all(nodes: list[DerivedNode] | HeldDerived, name: str, value: Any) -> None:
    """Set attribute ``name`` of every one of ``nodes`` (or of a held column's) to
    ``value`` (a C-level sweep; a held column keeps it as a column)."""
    if type(nodes) is HeldDerived:
        nodes.set_all(name, value)
    else:
        deque(map(setattr, nodes, repeat(name), repeat(value)), maxlen=0)


#: a derived node's input (None: no formula resolved, or an engine hook)
_input_of = attrgetter("input")

#: a derived node's matched module path
_module_path_of = attrgetter("bound.module_path")

#: the second item of a pair
_SECOND = itemgetter(1)

#: what shape inference reads of a source node: its shape, stride, dtype and device
_layout = attrgetter("shape", "stride", "dtype", "device")


@dataclass
class _Stamped:
    """The rows that took their template's meta values, and every other node's order."""

    tables: list[InstanceTable] = field(default_factory=list)
    leading: dict[tuple[str, ...], int] = field(default_factory=dict)  # template -> #derived
    rest: list[str] | None = None  # None: every node
    _derived: dict[str, str] | None = None
    # the stamper's run tables (``infer_shapes``' ``run_nodes``; see :meth:`derived_column`)
    run_nodes: Mapping[int, tuple[Any, ...]] = field(default_factory=dict)

    def derived_column(self, table: InstanceTable, k: int,
                       derived: Mapping[str, DerivedNode]) -> list[DerivedNode] | HeldDerived:
        """Each row's derived tensor at template position ``k`` of ``table`` (``derived``:
        the graph's, :attr:`DerivedGraph.derived_view
        <derivgraph.compiler.graph.DerivedGraph.derived_view>`): the node of each row's
        ``k``-th id; :attr:`run_nodes`' column where it holds one for ``table``
        (:func:`~derivgraph.compiler.instances.run_column`: the same nodes, not to be
        written, or their held column, :class:`~derivgraph.compiler.graph.HeldDerived`),
        else each id looked up."""
        held = run_column(self.run_nodes, table, k)
        if held is not None:
            return held  # type: ignore[no-any-return]
        return list(map(derived.__getitem__, table.cols[k]))

    @property
    def derived(self) -> dict[str, str]:
        """Each row's leading derived tensors -> the template's, table after table (made on
        first read)."""
        if self._derived is None:
            self._derived = {}
            for table, k in zip(self.tables, self._leading(), strict=True):
                self._derived.update(zip(table.ids_at(0, k), table.template[:k] * len(table)))
        return self._derived

    def _leading(self) -> list[int]:
        """Per table, how many derived tensors its template leads with."""
        return [self.leading[table.template] for table in self.tables]

    def templates(self) -> set[str]:
        """The values of :attr:`derived`: each template's leading derived tensors, where its
        table has a row."""
        return {t for table, k in zip(self.tables, self._leading(), strict=True)
                if table.rows for t in table.template[:k]}

    def unstamped(self, derived: dict[str, Any]) -> list[str]:
        """The ids of ``derived`` that are no key of :attr:`derived`, in order: the keys
        around each table's leading derived tensors (row after row) where those are one
        stretch of ``derived``'s order, the stretches apart; else by one sweep of
        :attr:`derived`."""
        if self._derived is None:
            keys, cut = list(derived), []
            for table, k in zip(self.tables, self._leading(), strict=True):
                ids = table.ids_at(0, k)  # row by row
                if not ids:
                    continue
                try:
                    at = keys.index(ids[0])
                except ValueError:
                    break
                if keys[at:at + len(ids)] != ids:
                    break
                cut.append((at, at + len(ids)))
            else:
                cut.sort()
                if all(a[1] <= b[0] for a, b in zip(cut, cut[1:])):
                    bounds = [0, *chain.from_iterable(cut), len(keys)]
                    return list(chain.from_iterable(map(
                        keys.__getitem__, map(slice, bounds[::2], bounds[1::2]))))
        return list(filterfalse(self.derived.__contains__, derived))


def _run_stamped(graph: DerivedGraph, interp: MetaInterpreter,
                 run_nodes: Mapping[int, tuple[Any, ...]] | None = None) -> _Stamped:
    """Run ``interp`` over the graph, a closed stamped row (:func:`closed_layers`) whose
    sources have its template's layouts (shape, stride, dtype, device; the table's record
    gives them where the template's probes proved them, the others are read per row) taking
    the template's meta values (the same ops and constants over the same layouts) when they
    are all tensors.
    Every other layer is inferred node by node (so each reports its own failures).
    ``run_nodes``: the stamper's run tables (:func:`infer_shapes`'), kept by the result."""
    tables, out = closed_layers(graph), _Stamped(run_nodes=run_nodes or {})
    if not tables:
        interp.run()
        return out
    nodes, version = graph.nodes, graph.ir.version
    record: dict[int, tuple[Any, ...]] = {}
    out.rest = order_without_rows(graph, tables)
    interp.run(out.rest)  # the templates among them
    # the rows' values kept aside (put in on first need: no compile, run or refill reads a
    # row's; their readers ask the record, rows_hold_metas)
    env = interp.env = _MetaEnv(interp.env)
    graph.meta_rows = (env, version, record)
    again: set[str] = set()
    for table in tables:
        template = table.template
        plan = _template_plan(graph, env, template)
        if plan is None:
            again.update(table.ids())
            continue
        out.leading[template] = plan[3]
        # the sources whose layout the rows' record does not give: one sweep each
        check = [(i, want) for i, want in zip(plan[1], plan[2])
                 if not table.layouts_hold or table.layouts.get(i) != want]
        if not all(set(map(_layout, map(nodes.__getitem__, table.column(i)))) == {want}
                   for i, want in check):
            wants = [want for _, want in check]
            keep = [[_layout(nodes[row[i]]) for i, _ in check] == wants
                    for row in table.rows]
            again.update(chain.from_iterable(compress(table.rows, [not k for k in keep])))
            table = table.subset(keep)
        out.tables.append(table)
        n = len(table.rows)
        env.defer(table.ids(), partial(mul, plan[0], n))  # row by row
        record[id(table)] = (table, table.rows, n, tuple(plan[0]))
    if again:
        held = layer_nodes(tables)
        interp.run([n for n in graph.ordered() if n in again])
        out.rest = [n for n in graph.ordered() if n not in held or n in again]
    return out


class _MetaEnv(KeptAside):
    """Shape inference's env (node id -> meta value) with the stamped rows' values kept
    aside (:class:`~derivgraph.compiler.row_deps.KeptAside`); a write puts them in first
    (so a value written later is never overwritten by theirs)."""

    def __setitem__(self, key: str, value: Any) -> None:
        if self._deferred:
            self.complete()
        dict.__setitem__(self, key, value)


def rows_hold_metas(graph: DerivedGraph, env: dict[str, Any], table: InstanceTable,
                    metas: Sequence[Any]) -> bool:
    """Whether shape inference gave every row of ``table`` the meta values ``metas`` in
    ``env`` (:func:`_run_stamped` set them so, ``graph.meta_rows`` records it): the same env
    object, graph version, table, rows list and length, and the template's values. A false
    answer says nothing (the caller sweeps the rows). Nothing writes the env after inference
    (a new inference makes a new one)."""
    recorded, version, tables = graph.meta_rows
    got = tables.get(id(table))
    return recorded is env and version == graph.ir.version and got is not None \
        and got[0] is table and got[1] is table.rows and got[2] == len(table.rows) \
        and len(got[3]) == len(metas) and all(map(is_, got[3], metas))


def _template_plan(graph: DerivedGraph, env: dict[str, Any], template: tuple[str, ...],
                   ) -> tuple[list[Any], list[int], list[Any], int] | None:
    """A template's meta values, its sources' positions and layouts, and how many derived
    tensors it leads with; None when a value is not a tensor."""
    values = [env.get(n) for n in template]
    if not all(isinstance(v, torch.Tensor) for v in values):
        return None
    nodes = graph.nodes
    sources = [i for i, n in enumerate(template) if nodes[n].kind is NodeKind.SOURCE]
    derived = next((i for i, n in enumerate(template) if n not in graph.derived_ids),
                   len(template))
    return values, sources, [_layout(nodes[template[i]]) for i in sources], derived


def _check_limits(graph: DerivedGraph, env: dict[str, Any], stamped: _Stamped) -> None:
    """The size and budget checks. A layer that took its template's values holds the same
    value objects, so when every other node is within the size limits and the budgets hold at
    the totals (bytes only add up), no check can fail; otherwise the full checks run, so the
    issues are exactly the plain ones."""
    if stamped.rest is None:
        _check_sizes(graph, env)
        return
    issues = len(graph.issues)
    _check_sizes(graph, env, stamped.rest, budgets=False)
    if len(graph.issues) == issues and _within_budgets(graph, env, stamped):
        return
    del graph.issues[issues:]
    _check_sizes(graph, env)


def _check_sizes(graph: DerivedGraph, env: dict[str, Any], order: list[str] | None = None,
                 budgets: bool = True) -> None:
    """Refuse any inferred tensor (intermediates too) above the element limit, before allocation.

    The issue is reported on the first derived tensor the oversized value feeds, so it carries
    that spec's file and line.
    """
    feeds: dict[str, DerivedNode | None] | None = None
    nodes = graph.nodes
    oversized: set[str] = set()
    within: set[tuple[Any, int]] = set()  # (shape, itemsize) found within the limits
    checked: set[int] = set()  # ids of the values found within (a stamped op shares its twin's)
    for n in graph.ordered() if order is None else order:
        value = env.get(n)
        if id(value) in checked or not isinstance(value, torch.Tensor) \
                or nodes[n].kind is NodeKind.SOURCE:
            continue
        layout = (value.shape, value.element_size())
        if layout in within:
            checked.add(id(value))
            continue
        try:
            check_numel(value.shape, n)
            check_bytes(value.shape, value.element_size(), n)
        except LimitError as exc:
            oversized.add(n)
            if not any(p in oversized for p in nodes[n].inputs):  # once per oversized chain
                feeds = first_feeds(graph) if feeds is None else feeds
                graph.issue(exc.rule, exc.message, exc.fix, graph.derived.get(n) or feeds.get(n))
            continue
        within.add(layout)
        checked.add(id(value))
    if not oversized and budgets:
        _check_budgets(graph, env)


def _held_bytes(node: DerivedNode, value: Any) -> int:
    """Bytes a derived tensor holds towards the budgets (0: not a held tensor)."""
    if node.kind not in HELD_KINDS or not isinstance(value, torch.Tensor):
        return 0
    return value.numel() * value.element_size()


def _within_budgets(graph: DerivedGraph, env: dict[str, Any], stamped: _Stamped) -> bool:
    """Whether the per-file and per-model budgets hold at the totals; a layer that took its
    template's values counts the template's bytes (per spec file) at its own module."""
    per_file: dict[tuple[str, str], int] = {}
    files: dict[int, str] = {}  # id(decl) -> its spec file

    def add(node: DerivedNode, nbytes: int, into: dict[Any, int], path: bool) -> None:
        file = files.get(id(node.decl))
        if file is None:
            file = files[id(node.decl)] = node.decl.location.file
        key = (file, node.bound.module_path) if path else file
        into[key] = into.get(key, 0) + nbytes

    derived = graph.derived_view  # a held column's nodes not made
    for node_id in stamped.rest or ():  # every node outside those layers
        node = derived.get(node_id)
        nbytes = 0 if node is None else _held_bytes(node, env.get(node_id))
        if nbytes:
            add(node, nbytes, per_file, True)
    spread: list[tuple[str, int, list[str]]] = []  # (spec file, bytes, the rows' modules)
    for table in stamped.tables:
        sizes: dict[str, int] = {}  # spec file -> the template's bytes
        for t in table.template[:stamped.leading[table.template]]:
            nbytes = _held_bytes(derived[t], env.get(t))
            if nbytes:
                add(derived[t], nbytes, sizes, False)
        if sizes:
            column = stamped.derived_column(table, 0, derived)
            paths = list(map(_module_path_of, column)) if type(column) is list else \
                list(paths_of(column.bounds))
            spread += [(file, nbytes, paths) for file, nbytes in sizes.items()]
    held = _spread_within(per_file, spread)
    if held is not None:
        return held
    for file, nbytes, paths in spread:
        for path in paths:
            per_file[file, path] = per_file.get((file, path), 0) + nbytes
    return sum(per_file.values()) <= LIMITS.max_model_alloc_bytes and \
        all(v <= LIMITS.max_file_alloc_bytes for v in per_file.values())


def _spread_within(per_file: dict[tuple[str, str], int],
                   spread: list[tuple[str, int, list[str]]]) -> bool | None:
    """Whether the budgets hold with ``spread``'s bytes (a spec file's, at each of its
    modules) added to ``per_file``, read off the totals when no (file, module) comes twice
    (so no bytes add up at one key); None when one does."""
    keys = [*per_file, *chain.from_iterable(zip(repeat(file), paths)
                                            for file, _, paths in spread)]
    if len(set(keys)) != len(keys):
        return None
    limit = LIMITS.max_file_alloc_bytes
    return sum(per_file.values()) + sum(n * len(p) for _, n, p in spread) \
        <= LIMITS.max_model_alloc_bytes and all(v <= limit for v in per_file.values()) \
        and all(n <= limit for _, n, _ in spread)  # (a template's own key holds its n)


def _check_budgets(graph: DerivedGraph, env: dict[str, Any]) -> None:
    """Bytes of the held derived tensors per spec file and matched module, and per model."""
    per_file: dict[tuple[str, str], int] = {}
    files: dict[int, str] = {}  # id(decl) -> its spec file
    total, over = 0, set()
    for node_id, node in graph.derived.items():
        value = env.get(node_id)
        if node.kind not in HELD_KINDS or not isinstance(value, torch.Tensor):
            continue
        nbytes = value.numel() * value.element_size()
        file = files.get(id(node.decl))
        if file is None:
            file = files[id(node.decl)] = node.decl.location.file
        key = (file, node.bound.module_path)
        per_file[key] = per_file.get(key, 0) + nbytes
        total += nbytes
        if per_file[key] <= LIMITS.max_file_alloc_bytes and total <= LIMITS.max_model_alloc_bytes:
            continue  # within both budgets (the messages below are made only when needed)
        budgets = ((key, per_file[key], LIMITS.max_file_alloc_bytes,
                    f"the specs of {key[0]} for {key[1] or 'the model root'}",
                    "DERIVGRAPH_MAX_FILE_BYTES"),
                   ("model", total, LIMITS.max_model_alloc_bytes,
                    f"the derived tensors of {type(graph.model).__name__}",
                    "DERIVGRAPH_MAX_MODEL_BYTES"))
        for which, used, limit, what, env_name in budgets:
            try:
                check_budget(used, limit, what, env_name)
            except LimitError as exc:
                if which not in over:  # once per budget, at the tensor that crosses it
                    over.add(which)
                    graph.issue(exc.rule, exc.message, exc.fix, node)


def first_feeds(graph: DerivedGraph) -> dict[str, DerivedNode | None]:
    """Node id -> the first derived tensor it feeds (whose spec file:line an issue carries)."""
    feeds: dict[str, DerivedNode | None] = {}
    nodes = graph.nodes
    for n in reversed(graph.ordered()):
        here = graph.derived.get(n) or feeds.get(n)
        for p in nodes[n].inputs:
            feeds.setdefault(p, here)
    return feeds


def _source_devices(graph: DerivedGraph, order: list[str] | None = None,
                    ) -> dict[str, frozenset[Any]]:
    """Node id -> devices of the sources it reads (one sweep over ``order``, default: all)."""
    out: dict[str, frozenset[Any]] = {}
    empty: frozenset[Any] = frozenset()
    nodes = graph.nodes
    for n in graph.ordered() if order is None else order:
        node = nodes[n]
        if node.kind is NodeKind.SOURCE:
            out[n] = frozenset((node.device,))
        elif len(node.inputs) == 1:
            out[n] = out[node.inputs[0]]
        else:
            out[n] = empty.union(*(out[p] for p in node.inputs))
    return out


def _check_declared(graph: DerivedGraph, node: DerivedNode, value: torch.Tensor,
                    src_devices: frozenset[Any]) -> None:
    decl = node.decl
    params = node.params
    if decl.dtype is not None:
        want = DTYPES.get(decl.dtype)
        if want is None:
            graph.issue(Rule.SCHEMA, f"unknown dtype {decl.dtype!r}",
                        f"use one of {', '.join(sorted(DTYPES))}", node)
        elif want != value.dtype:
            graph.issue(Rule.MISMATCH, f"declared dtype {decl.dtype} but the formula gives "
                        f"{str(value.dtype).removeprefix('torch.')}",
                        f"wrap the formula in cast(..., {decl.dtype}) or fix `dtype`", node)
    if decl.shape is not None:
        want_shape = [params.get(s, s) if isinstance(s, str) else s for s in decl.shape]
        if list(value.shape) != want_shape:
            graph.issue(Rule.MISMATCH, f"declared shape {decl.shape} = {want_shape} but the "
                        f"formula gives {list(value.shape)}",
                        "fix `shape`, or reshape in the formula (copies never broadcast)", node)
    kind = node.kind
    if kind is TensorKind.SCALAR and value.numel() != 1:
        graph.issue(Rule.MISMATCH, f"a scalar needs one element, the formula gives "
                    f"{list(value.shape)}", "reduce the formula, e.g. amax(x)", node)
    target = graph.nodes.get(node.input) if node.input else None
    if kind is TensorKind.ALIAS and target is not None and target.kind is NodeKind.SOURCE:
        node.device = target.device
    if decl.device and src_devices and node.device not in src_devices \
            and kind is not TensorKind.ALIAS:
        graph.issue(Rule.MISMATCH, f"declared device {node.device} but the sources are on "
                    f"{', '.join(sorted(map(str, src_devices)))}",
                    "drop `device` or point it at the right tensor", node)
    elif not decl.device and src_devices:
        node.device = sorted(src_devices, key=str)[0]
