"""Build and validate one networkx DAG of derived tensors for a whole model.

:func:`build_graph` creates a derived node per declaration (checking owners, kinds and
duplicates; for a run of layers whose params a template proved by columns,
:mod:`derivgraph.compiler.stamp_columns`, a declaration at a time over the run when no check
would fail there), resolves every formula into source and op nodes
(:mod:`derivgraph.compiler.resolve`), rejects cycles, and infers shapes and dtypes on meta
tensors (:mod:`derivgraph.compiler.infer`). Every problem is collected as a
:class:`~derivgraph.errors.SpecIssue`; nothing here writes a tensor.
The node kinds are described in :mod:`derivgraph.compiler.graph`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain, repeat
from operator import is_
from typing import Any, NamedTuple

from torch import nn

from derivgraph.compiler.bind import BoundSpec, BoundSpecs, modules_of, paths_of
from derivgraph.compiler.checks import index_issues
from derivgraph.compiler.engine import is_opaque
from derivgraph.compiler.graph import (
    DerivedGraph,
    DerivedNode,
    HeldDerived,
    HeldRun,
    NodeRef,
    natural_key,
    refs_in,
    tensor_kind,
)
from derivgraph.compiler.infer import infer_shapes
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.layers import Span, closed_layers, row_blocks
from derivgraph.compiler.reads import Reads
from derivgraph.compiler.resolve import Resolver, device_of, devices_of, parse_cached
from derivgraph.compiler.stamp import Stamper, build_layers, stamping_enabled
from derivgraph.compiler.stamp_columns import HopSweeps
from derivgraph.compiler.stamp_params import ParamStamper
from derivgraph.errors import FormulaError, Rule
from derivgraph.ops import OPS, OpKind
from derivgraph.paths import MISSING, get_path, join
from derivgraph.spec.kinds import TensorKind, is_fold
from derivgraph.spec.model import DerivedTensor

__all__ = ["DerivedGraph", "DerivedNode", "NodeRef", "build_graph"]

#: per declaration, its nodes on every row of a run (held), and their ids (the rows' columns)
_Columns = tuple[list[HeldDerived], list[list[str]]]

#: the kinds whose owner must be an nn.Module
_MODULE_KINDS = frozenset({TensorKind.PARAMETER, TensorKind.BUFFER})


def build_graph(model: nn.Module, bound_specs: Iterable[BoundSpec]) -> DerivedGraph:
    """Resolve every bound spec into one DAG; problems are collected in ``graph.issues``."""
    graph = DerivedGraph(model)
    bound_specs = BoundSpecs.of(bound_specs)  # a row's BoundSpec made where it is read
    layers = build_layers()  # (bound, params, nodes) per layer, as columns
    sweeps = HopSweeps()  # the first-hop sweeps both stampers' proofs share
    param_stamper = ParamStamper(graph, bound_specs if stamping_enabled() else (), sweeps)
    decls_of: dict[int, list[_Decl]] = {}  # id(spec) -> its declarations of nodes
    plain: dict[type, bool] = {}  # module class -> whether its parameters() is nn.Module's
    skip = 0  # rows made with the column run of an earlier row
    runs: dict[int, int] = {}  # a run's first layer -> its length, when its rows share a key
    run_columns: dict[int, _Columns] = {}  # and its derived tensors made by column
    at = -1
    while at + 1 < len(bound_specs):
        at += 1
        if skip:  # the rows of a run (one C-level skip, no row read)
            at, skip = at + skip - 1, 0
            continue
        bound = bound_specs[at]
        params = param_stamper.resolve(bound, at)
        if params is not None:
            decls = decls_of.get(id(bound.spec)) or _decls(decls_of, bound)
            layers.append(bound, params,
                          _derived_nodes(graph, model, bound, params, decls, plain))
        if param_stamper.proven:  # the rows right after it whose params one template
            # proved by columns: their nodes made column by column when every check passes
            # there (else row by row, as above)
            run = param_stamper.proven_after(at)
            if run:
                bounds = bound_specs[at + 1:at + 1 + len(run)]  # columns
                decls = _decls(decls_of, bounds[0])
                made = _derived_columns(graph, bounds, run, decls, plain, sweeps)
                if made is None:
                    layers.extend(bounds, run,
                                  [_derived_nodes(graph, model, b, p, decls, plain)
                                   for b, p in zip(bounds, run, strict=True)])
                else:  # every row's nodes held by column (HeldRun)
                    one_key, columns = made
                    if one_key:
                        runs[len(layers)] = len(bounds)
                        run_columns[len(layers)] = columns
                    layers.extend(bounds, run,
                                  [HeldRun(columns[0], len(layers))] * len(bounds))
                skip = len(run)
    stamper = Stamper(graph, lambda node, reads: _resolve_derived(graph, node, reads),
                      layers if stamping_enabled() else (), runs, sweeps, run_columns)
    stamper.resolve_layers(layers)
    graph.stamped, graph.stamps = stamper.stamped, list(stamper.tables.values())
    graph.run_nodes = stamper.run_nodes
    graph.params_stamped = param_stamper.stamped
    _check_cycles(graph)
    graph.row_ids.release()  # read by its proof of the stamped rows (closed_layers), done
    if not any(i.rule == Rule.CYCLE for i in graph.issues):
        infer_shapes(graph, stamper.twins, stamper.run_nodes)
        index_issues(graph)
    return graph


def _decls(decls_of: dict[int, list[_Decl]], bound: BoundSpec) -> list[_Decl]:
    """The declarations of ``bound``'s spec that make nodes (read once per spec)."""
    decls = decls_of.get(id(bound.spec))
    if decls is None:  # fold hook: folds are bound by derivgraph.compiler.fold, not nodes
        decls = decls_of[id(bound.spec)] = [_Decl.of(d) for d in bound.spec.derived
                                            if not is_fold(d)]
    return decls


class _Decl(NamedTuple):
    """A declaration of a derived node, with what every module it binds to reads the same
    way: its kind (as :class:`DerivedNode` reads it), whether its owner must be an
    ``nn.Module``."""

    decl: DerivedTensor
    module_kind: bool

    @classmethod
    def of(cls, decl: DerivedTensor) -> _Decl:
        return cls(decl, tensor_kind(decl) in _MODULE_KINDS)


def _derived_nodes(graph: DerivedGraph, model: nn.Module, bound: BoundSpec,
                   params: dict[str, Any], decls: list[_Decl],
                   plain: dict[type, bool]) -> list[DerivedNode]:
    """A derived node per declaration of ``bound``, each added to ``graph`` unless it is a
    duplicate or its owner is wrong (an issue)."""
    nodes: list[DerivedNode] = []
    devices: dict[str | None, Any] = {}  # decl.device -> device, read once per module
    owners: dict[str, Any] = {}  # owner path -> the owner, read once per module
    derived, module_path = graph.derived_ids, bound.module_path
    for decl, module_kind in decls:
        owner_path = bound.qualify(decl.owner) if decl.owner else module_path
        device = devices.get(decl.device)
        if device is None:
            device = devices[decl.device] = device_of(bound, decl, plain)
        node = DerivedNode(join(owner_path, decl.name), bound, decl, owner_path, None, device,
                           params)
        if node.id in derived:
            other = graph.derived_node(node.id)
            assert other is not None  # a derived tensor's id
            graph.issue(Rule.DUPLICATE, f"{node.id} is declared by {node.where} and by "
                        f"{other.where} ({other.decl.location})",
                        "declare each derived tensor once; make the other an alias", node)
            continue
        if decl.owner:
            owner = owners.get(owner_path, MISSING)
            if owner is MISSING:  # a walk of `_modules`, or read
                owner = owners[owner_path] = get_path(model, owner_path)
        else:  # the module itself (as matched)
            owner = bound.module
        if owner is MISSING or owner is None:
            graph.issue(Rule.MISSING_SOURCE, f"owner path {decl.owner!r} does not exist on "
                        f"{type(bound.module).__name__} at {module_path or '<root>'}",
                        "fix `owner`, or narrow the target (object/where) so the spec only "
                        "matches modules that have it", node)
            continue
        if module_kind and not isinstance(owner, nn.Module):
            graph.issue(Rule.OWNER, f"kind '{decl.kind}' needs an nn.Module owner, but "
                        f"{decl.owner or '<module>'} is a {type(owner).__name__}",
                        "use kind 'attribute' for tensors on plain objects", node)
            continue
        graph.add_derived(node)
        nodes.append(node)
    return nodes


def _derived_columns(graph: DerivedGraph, bounds: list[BoundSpec], params: list[dict[str, Any]],
                     decls: list[_Decl], plain: dict[type, bool],
                     sweeps: HopSweeps | None = None) -> tuple[bool, _Columns] | None:
    """What :func:`_derived_nodes` gives each of ``bounds`` (modules of one class, each with a
    module path, one spec), held a declaration at a time over every row
    (:class:`~derivgraph.compiler.graph.HeldDerived`: the nodes made on first read) and
    added to ``graph`` in its order, when no row would report an issue there: every
    declaration is owned by the matched module, and no id is taken or repeated. None
    (nothing added) else. Whether each declaration has one device on every row (then, their
    params being one template's copy, the rows have one stamping key), and the held columns
    and their ids, by declaration. ``sweeps``: the build's kept first-hop sweeps, which may
    prove the rows' devices (:func:`~derivgraph.compiler.resolve.devices_of`)."""
    modules = modules_of(bounds)  # read only
    cls = type(modules[0])
    if any(decl.owner for decl, _ in decls) or not issubclass(cls, nn.Module) \
            or not all(map(is_, map(type, modules), repeat(cls))):
        return None
    paths = paths_of(bounds)  # kept by the columns (the build writes no bound spec)
    ids = graph.row_ids.keep_paths(paths, ["." + decl.name for decl, _ in decls])
    every = list(chain.from_iterable(zip(*ids)))  # the order _derived_nodes adds them in
    fresh = set(every)  # then the derived tensors so far swept, not the new ids
    if len(fresh) != len(every) or not graph.derived_ids.isdisjoint(fresh):
        return None
    devices: dict[str | None, list[Any]] = {}  # decl.device -> each row's device
    for decl, _ in decls:
        if decl.device not in devices:
            devices[decl.device] = devices_of(modules, decl, plain, sweeps)
    columns = [HeldDerived(column, bounds, decl, paths, devices[decl.device], params,
                           tensor_kind(decl))  # the kind read once
               for column, (decl, _) in zip(ids, decls, strict=True)]
    graph.hold_derived(columns, every, fresh)  # their ids, and the set of them
    return all(column == [column[0]] * len(column) for column in devices.values()), \
        (columns, ids)


def _resolve_derived(graph: DerivedGraph, node: DerivedNode, reads: Reads | None) -> str | None:
    """Resolve ``node``'s formula into graph nodes; its input id (None: an issue, or none)."""
    resolver = Resolver(graph, node.bound, node, node.params, node.device, reads)
    decl = node.decl
    if is_opaque(decl):  # engine hook: no formula to resolve; the engine makes the value
        return None
    try:
        if node.kind is TensorKind.ALIAS:
            assert decl.of is not None
            value = resolver.resolve(parse_cached(decl.of))
            if not isinstance(value, NodeRef) or not _is_plain_path(decl.of):
                raise FormulaError(Rule.ALIAS, f"alias target {decl.of!r} is not a tensor path",
                                  "`of` names a derived tensor of this spec or a source path")
            if value.id == node.id:
                raise FormulaError(Rule.ALIAS, "an alias cannot be its own target",
                                  "point `of` at another tensor")
        else:
            assert decl.formula is not None
            value = resolver.resolve(parse_cached(decl.formula))
    except FormulaError as exc:
        graph.issue(exc.rule, f"{decl.formula or decl.of!r}: {exc.message}", exc.fix, node)
        return None
    if not isinstance(value, NodeRef):
        graph.issue(Rule.INFERENCE, f"formula {decl.formula!r} is the constant {value!r}, not a "
                    "tensor", "wrap constants in full([shape], value, dtype=...)", node)
        return None
    if node.kind is TensorKind.VIEW and not _is_view_chain(graph, value.id):
        graph.issue(Rule.ALIAS, f"view formula {decl.formula!r} uses ops that copy",
                    "a view may only use view ops (slicing, view, reshape, transpose, squeeze, "
                    "...) over one tensor; use kind 'attribute' or 'buffer' for computed values",
                    node)
        return None
    graph.set_input(node, value.id)
    return value.id


def _is_plain_path(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][\w]*(\.[\w]+)*", text.strip()) is not None


def _is_view_chain(graph: DerivedGraph, node_id: str) -> bool:
    node = graph.nodes[node_id]
    while node.kind is NodeKind.OP:
        if OPS[node.op].kind is not OpKind.VIEW or len(refs_in(node.args)) != 1:
            return False
        node = graph.nodes[node.inputs[0]]
    return True


def _check_cycles(graph: DerivedGraph) -> None:
    try:  # linear; raises only if there is a cycle (a closed stamped row: its template's walk;
        # a closed run of them: its spans)
        spans: list[Span] = []  # a closed run's rows: emitted whole, not walked
        tables = closed_layers(graph)
        blocks = row_blocks(graph, tables, spans)
        graph.ir.order(blocks, spans)
        graph.span_cache = (graph.ir.version, tables)
        return
    except ValueError:
        pass
    import networkx as nx

    for component in nx.strongly_connected_components(graph.g):
        if len(component) < 2:
            continue
        sub = graph.g.subgraph(component)
        cycle = [u for u, _ in nx.find_cycle(sub)]
        named = [c for c in cycle if c in graph.derived] or cycle
        start = min(range(len(named)), key=lambda i: natural_key(named[i]))
        named = named[start:] + named[:start]
        shown = " -> ".join([*named, named[0]])
        graph.issue(Rule.CYCLE, f"derived tensors depend on each other in a cycle: {shown}",
                    "break the cycle: a derived tensor may not depend on itself, directly or "
                    "through others", graph.derived.get(named[0]))
