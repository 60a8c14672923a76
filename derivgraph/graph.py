"""Build and validate one networkx DAG of derived tensors for a whole model.

Nodes (attribute ``kind``):

* ``source`` — a tensor the engine owns (a weight, a scale), read at its path each run;
* ``op`` — an intermediate: a registered op over other nodes and Python constants. Identical
  subexpressions share one node across specs and layers (common-subexpression elimination);
* ``derived`` — a declared derived tensor, bound to an owner; its one input edge is its value.

Formulas are resolved by partial evaluation: params, shapes and config numbers fold into
Python constants at compile time (a frozen plan); tensors become nodes. Validation runs every
op on ``meta`` tensors, so shapes and dtypes are checked without touching real data. Every
problem is collected as a :class:`~derivgraph.errors.SpecIssue`; nothing here writes a tensor.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
from torch import nn

from .bind import BoundSpec
from .errors import Rule, SourceLocation, SpecIssue, SpecValidationError
from .expr import (
    Attr,
    Call,
    Comp,
    Const,
    Expr,
    FormulaError,
    Index,
    ListExpr,
    Name,
    Slice,
    parse_formula,
)
from .ops import DTYPES, OPS
from .paths import MISSING, get_path, join
from .spec import DerivedTensor

__all__ = ["DerivedGraph", "DerivedNode", "NodeRef", "build_graph"]

_FOLDABLE = {"add", "sub", "mul", "div", "floordiv", "pow", "neg"}


@dataclass(frozen=True)
class NodeRef:
    """A reference to a graph node inside op arguments."""

    id: str


@dataclass
class DerivedNode:
    """A declared derived tensor bound to one module."""

    id: str
    bound: BoundSpec
    decl: DerivedTensor
    owner_path: str  # from the model root
    input: str | None = None  # node id of the value (or alias target / view base chain)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    params: dict[str, Any] = field(default_factory=dict)
    meta: torch.Tensor | None = None  # inferred value on the meta device

    @property
    def kind(self) -> str:
        return self.decl.kind

    @property
    def where(self) -> str:
        return f"{self.bound.spec.name}:{self.decl.name}"


class _Unresolved(Exception):
    def __init__(self, rule: str, message: str, fix: str):
        super().__init__(message)
        self.rule, self.message, self.fix = rule, message, fix


def _natural_key(path: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def _freeze(value: Any) -> Any:
    if isinstance(value, NodeRef):
        return ("ref", value.id)
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_freeze(v) for v in value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, (torch.dtype, torch.device)):
        return ("torch", str(value))
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def refs_in(value: Any) -> list[str]:
    """Node ids referenced anywhere inside an op argument."""
    if isinstance(value, NodeRef):
        return [value.id]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in refs_in(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs_in(v)]
    return []


def substitute(value: Any, lookup: Any) -> Any:
    """Replace every NodeRef in an op argument by ``lookup(node_id)``."""
    if isinstance(value, NodeRef):
        return lookup(value.id)
    if isinstance(value, list):
        return [substitute(v, lookup) for v in value]
    if isinstance(value, tuple):
        return tuple(substitute(v, lookup) for v in value)
    if isinstance(value, dict):
        return {k: substitute(v, lookup) for k, v in value.items()}
    return value


class DerivedGraph:
    """The model's DAG plus the issues found while building it."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.g = nx.DiGraph()
        self.derived: dict[str, DerivedNode] = {}
        self.issues: list[SpecIssue] = []
        self._cse: dict[Any, str] = {}
        self._op_count = 0
        self.cse_hits = 0

    # ---- node creation ------------------------------------------------------------------
    def source(self, path: str, tensor: torch.Tensor) -> NodeRef:
        if path in self.derived:
            return NodeRef(path)
        if path not in self.g:
            self.g.add_node(path, kind="source", path=path, shape=tuple(tensor.shape),
                            stride=tuple(tensor.stride()), dtype=tensor.dtype,
                            device=tensor.device)
        return NodeRef(path)

    def op(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> NodeRef:
        key = (name, _freeze(args), _freeze(kwargs))
        if key in self._cse:
            self.cse_hits += 1
            return NodeRef(self._cse[key])
        self._op_count += 1
        node_id = f"%{self._op_count}:{name}"
        self.g.add_node(node_id, kind="op", op=name, args=args, kwargs=kwargs)
        for ref in refs_in(args) + refs_in(kwargs):
            self.g.add_edge(ref, node_id)
        self._cse[key] = node_id
        return NodeRef(node_id)

    def issue(self, rule: str, message: str, fix: str, node: DerivedNode | None) -> None:
        loc = node.decl.location if node else SourceLocation()
        self.issues.append(SpecIssue(rule, message, fix, loc, node.id if node else ""))

    # ---- queries ------------------------------------------------------------------------
    def sources(self) -> list[str]:
        return [n for n, d in self.g.nodes(data=True) if d["kind"] == "source"]

    def _version(self) -> tuple[int, int]:
        return (self.g.number_of_nodes(), self.g.number_of_edges())

    def ordered(self) -> list[str]:
        """Node ids in a deterministic topological order (cached until the graph changes)."""
        if getattr(self, "_order_version", None) != self._version():
            self._order = list(nx.lexicographical_topological_sort(self.g, key=_natural_key))
            self._order_version = self._version()
        return self._order

    def source_deps(self) -> dict[str, frozenset[str]]:
        """Node id -> the source nodes it depends on (computed in one topological sweep)."""
        if getattr(self, "_deps_version", None) != self._version():
            deps: dict[str, frozenset[str]] = {}
            for n in self.ordered():
                if self.g.nodes[n]["kind"] == "source":
                    deps[n] = frozenset((n,))
                else:
                    deps[n] = frozenset().union(*(deps[p] for p in self.g.predecessors(n)))
            self._deps, self._deps_version = deps, self._version()
        return self._deps

    def constant(self, node_id: str) -> bool:
        """True if no source tensor feeds ``node_id`` (its value never changes)."""
        return not self.source_deps()[node_id]

    def raise_if_issues(self) -> None:
        if self.issues:
            raise SpecValidationError(self.issues)


class _Resolver:
    """Partially evaluates one formula against one bound module."""

    def __init__(self, graph: DerivedGraph, bound: BoundSpec, node: DerivedNode | None,
                 params: dict[str, Any], device: torch.device):
        self.graph, self.bound, self.node = graph, bound, node
        self.params, self.device = params, device
        self.locals: dict[str, Any] = {}

    def fail(self, rule: str, message: str, fix: str) -> _Unresolved:
        return _Unresolved(rule, message, fix)

    # flatten Name/Attr/Index(int) chains into dotted parts
    def _chain(self, e: Expr) -> list[str] | None:
        if isinstance(e, Name):
            return [e.id]
        if isinstance(e, Attr):
            base = self._chain(e.base)
            return None if base is None else [*base, e.attr]
        if isinstance(e, Index) and len(e.index) == 1 and isinstance(e.index[0], Const) \
                and isinstance(e.index[0].value, int) and e.index[0].value >= 0:
            base = self._chain(e.base)
            return None if base is None else [*base, str(e.index[0].value)]
        return None

    def resolve(self, e: Expr) -> Any:
        if isinstance(e, Const):
            return e.value
        chain = self._chain(e)
        if chain is not None:
            return self._path(chain)
        if isinstance(e, Attr):
            return self._tensor_attr(self.resolve(e.base), [e.attr])
        if isinstance(e, Index):
            base = self.resolve(e.base)
            index = tuple(self._index(i) for i in e.index)
            index = index[0] if len(index) == 1 else index
            if isinstance(base, NodeRef):
                return self.graph.op("getitem", (base, index), {})
            try:
                return base[index]
            except (TypeError, IndexError, KeyError) as exc:
                raise self.fail(Rule.UNKNOWN_NAME, f"cannot index {base!r} with {index!r}: {exc}",
                                "index tensors, shapes or lists only") from None
        if isinstance(e, ListExpr):
            return [self.resolve(i) for i in e.items]
        if isinstance(e, Comp):
            return self._comprehension(e)
        if isinstance(e, Call):
            return self._call(e)
        raise self.fail(Rule.SYNTAX, f"cannot resolve {e!r}", "simplify the formula")

    def _index(self, e: Expr) -> Any:
        if isinstance(e, Slice):
            parts = [None if p is None else self.resolve(p) for p in (e.lower, e.upper, e.step)]
            if any(isinstance(p, NodeRef) for p in parts):
                raise self.fail(Rule.SYNTAX, "slice bounds must be numbers, not tensors",
                                "use params or shapes for slice bounds")
            return slice(*parts)
        value = self.resolve(e)
        if isinstance(value, NodeRef):
            raise self.fail(Rule.SYNTAX, "indices must be numbers, not tensors",
                            "use params or shapes as indices")
        return value

    def _path(self, parts: list[str]) -> Any:
        head, rest = parts[0], parts[1:]
        for scope in (self.locals, self.params):
            if head in scope:
                return self._tensor_attr(scope[head], rest)
        if self.node is not None:
            ref = self._derived_ref(head)
            if ref is not None:
                return self._tensor_attr(ref, rest)
        if head in DTYPES and not rest:
            return head
        if head in ("True", "False", "None") and not rest:
            return {"True": True, "False": False, "None": None}[head]
        return self._module_path(parts)

    def _derived_ref(self, name: str) -> NodeRef | None:
        me = self.node.decl if self.node is not None else None
        candidates = [d for d in self.bound.spec.derived if d.name == name and d is not me]
        if not candidates:
            return None
        primary = [d for d in candidates if d.kind != "alias"] or candidates
        if len(primary) > 1:
            raise self.fail(Rule.UNKNOWN_NAME, f"{name!r} names {len(primary)} derived tensors",
                            "give the derived tensors distinct names")
        d = primary[0]
        return NodeRef(join(self.bound.qualify(d.owner), d.name))

    def _module_path(self, parts: list[str]) -> Any:
        obj: Any = self.bound.module
        for i, part in enumerate(parts):
            if isinstance(obj, torch.Tensor):
                # reading .shape/.dtype of a tensor needs no graph node
                return self._tensor_attr(NodeRef(""), parts[i:], obj)
            nxt = get_path(obj, part)
            if nxt is MISSING:
                where = ".".join(parts[:i]) or type(self.bound.module).__name__
                raise self.fail(
                    Rule.UNKNOWN_NAME if i == 0 else Rule.MISSING_SOURCE,
                    f"{'.'.join(parts)!r}: {where} has no attribute {part!r}",
                    "use a param, a derived tensor of this spec, a dtype, or an attribute path "
                    f"that exists on {type(self.bound.module).__name__} after loading",
                )
            obj = nxt
        path = ".".join(parts)
        if isinstance(obj, torch.Tensor):
            return self.graph.source(self.bound.qualify(path), obj)
        if isinstance(obj, torch.Size):
            return tuple(obj)
        if isinstance(obj, (int, float, bool, str, tuple, list, torch.dtype)) or obj is None:
            return obj
        if hasattr(obj, "value") and isinstance(obj.value, (int, float, str)):
            return obj.value
        raise self.fail(Rule.MISSING_SOURCE,
                        f"{path!r} is a {type(obj).__name__}, not a tensor or a number",
                        "point the path at a tensor or a config number")

    def _tensor_attr(self, value: Any, rest: list[str], live: torch.Tensor | None = None) -> Any:
        if not rest:
            return value
        if isinstance(value, NodeRef):
            meta = self._meta_of(value, live)
            attr = rest[0]
            if attr == "shape" and meta is not None:
                shape = tuple(meta.shape)
                return shape if len(rest) == 1 else _index_seq(shape, rest[1:], self)
            if attr == "dtype" and meta is not None and len(rest) == 1:
                return str(meta.dtype).removeprefix("torch.")
            raise self.fail(Rule.UNKNOWN_NAME, f"tensor attribute {'.'.join(rest)!r} is not "
                            "supported", "only .shape, .shape[i] and .dtype can be read")
        for part in rest:
            value = get_path(value, part)
            if value is MISSING:
                raise self.fail(Rule.UNKNOWN_NAME, f"no attribute {part!r}",
                                "check the attribute path")
        return tuple(value) if isinstance(value, torch.Size) else value

    def _meta_of(self, ref: NodeRef, live: torch.Tensor | None) -> torch.Tensor | None:
        if live is not None:
            return live
        data = self.graph.g.nodes.get(ref.id, {})
        if data.get("kind") == "source":
            return torch.empty(data["shape"], dtype=data["dtype"], device="meta")
        node = self.graph.derived.get(ref.id)
        if node is not None and node.decl.shape is not None and node.decl.dtype is not None:
            shape = [self.params.get(s, s) if isinstance(s, str) else s for s in node.decl.shape]
            return torch.empty(shape, dtype=DTYPES[node.decl.dtype], device="meta")
        raise self.fail(Rule.UNKNOWN_NAME, f"the shape of derived {ref.id} is not known here",
                        "declare `shape` and `dtype` on that derived tensor, or read the "
                        "shape of a source instead")

    def _comprehension(self, e: Comp) -> list[Any]:
        module = self.bound.module
        names = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
        hits = sorted({n for n in names if fnmatch.fnmatchcase(n, e.pattern)}, key=_natural_key)
        if not hits:
            raise self.fail(Rule.MISSING_SOURCE, f"each({e.pattern!r}) matches no parameter or "
                            f"buffer of {type(module).__name__}",
                            "check the pattern against model.named_parameters()")
        out = []
        for name in hits:
            tensor = get_path(module, name)
            self.locals[e.var] = self.graph.source(self.bound.qualify(name), tensor)
            out.append(self.resolve(e.element))
        self.locals.pop(e.var, None)
        return out

    def _call(self, e: Call) -> Any:
        op = OPS[e.op]
        args = tuple(self.resolve(a) for a in e.args)
        kwargs = {k: self.resolve(v) for k, v in e.kwargs}
        if e.op in _FOLDABLE and not refs_in(args) and not refs_in(kwargs):
            try:
                return op.fn(*args, **kwargs)
            except (TypeError, ZeroDivisionError, ValueError) as exc:
                raise self.fail(Rule.INFERENCE, f"{e.op}{args}: {exc}",
                                "fix the constants") from None
        if op.kind == "create":
            kwargs["device"] = self.device
        return self.graph.op(e.op, args, kwargs)


def _index_seq(seq: tuple[Any, ...], rest: list[str], resolver: _Resolver) -> Any:
    value: Any = seq
    for part in rest:
        if not part.isdigit():
            raise resolver.fail(Rule.UNKNOWN_NAME, f"cannot read {part!r} of a shape",
                                "index shapes with integers: x.shape[0]")
        value = value[int(part)]
    return value


def _device_of(bound: BoundSpec, decl: DerivedTensor) -> torch.device:
    if decl.device:
        if decl.device == "cpu" or decl.device.startswith("cuda") or decl.device == "meta":
            return torch.device(decl.device)
        value = get_path(bound.module, decl.device)
        if isinstance(value, torch.Tensor):
            return value.device
        if isinstance(value, (str, torch.device)):
            return torch.device(value)
    for t in bound.module.parameters():
        return t.device
    for t in bound.module.buffers():
        return t.device
    return torch.device("cpu")


def _resolve_params(graph: DerivedGraph, bound: BoundSpec) -> dict[str, Any] | None:
    params: dict[str, Any] = {}
    resolver = _Resolver(graph, bound, None, params, torch.device("meta"))
    for name, text in bound.spec.params.items():
        try:
            value = resolver.resolve(parse_formula(text))
        except (FormulaError, _Unresolved) as exc:
            graph.issues.append(SpecIssue(exc.rule, f"param {name} = {text!r}: {exc.message}",
                                          exc.fix, bound.spec.location, bound.module_path))
            return None
        if isinstance(value, NodeRef):
            graph.issues.append(SpecIssue(
                Rule.SCHEMA, f"param {name} = {text!r} is a tensor, not a number",
                "params hold config numbers (shapes, sizes); move tensor math into a derived "
                "tensor", bound.spec.location, bound.module_path))
            return None
        params[name] = value
    return params


def build_graph(model: nn.Module, bound_specs: Iterable[BoundSpec]) -> DerivedGraph:
    """Resolve every bound spec into one DAG; problems are collected in ``graph.issues``."""
    graph = DerivedGraph(model)
    bound_specs = list(bound_specs)
    nodes: list[tuple[DerivedNode, dict[str, Any]]] = []
    for bound in bound_specs:
        params = _resolve_params(graph, bound)
        if params is None:
            continue
        for decl in bound.spec.derived:
            owner_path = bound.qualify(decl.owner)
            node = DerivedNode(join(owner_path, decl.name), bound, decl, owner_path,
                               device=_device_of(bound, decl), params=params)
            if node.id in graph.derived:
                other = graph.derived[node.id]
                graph.issue(Rule.DUPLICATE, f"{node.id} is declared by {node.where} and by "
                            f"{other.where} ({other.decl.location})",
                            "declare each derived tensor once; make the other an alias", node)
                continue
            owner = get_path(model, owner_path)
            if owner is MISSING or owner is None:
                graph.issue(Rule.MISSING_SOURCE, f"owner path {decl.owner!r} does not exist on "
                            f"{type(bound.module).__name__} at {bound.module_path or '<root>'}",
                            "fix `owner`, or narrow the target (object/where) so the spec only "
                            "matches modules that have it", node)
                continue
            if decl.kind in ("parameter", "buffer") and not isinstance(owner, nn.Module):
                graph.issue(Rule.OWNER, f"kind {decl.kind!r} needs an nn.Module owner, but "
                            f"{decl.owner or '<module>'} is a {type(owner).__name__}",
                            "use kind 'attribute' for tensors on plain objects", node)
                continue
            graph.derived[node.id] = node
            graph.g.add_node(node.id, kind="derived")
            nodes.append((node, params))
    for node, params in nodes:
        _resolve_derived(graph, node, params)
    _check_cycles(graph)
    if not any(i.rule == Rule.CYCLE for i in graph.issues):
        _infer(graph)
    return graph


def _resolve_derived(graph: DerivedGraph, node: DerivedNode, params: dict[str, Any]) -> None:
    resolver = _Resolver(graph, node.bound, node, params, node.device)
    decl = node.decl
    try:
        if decl.kind == "alias":
            assert decl.of is not None
            value = resolver.resolve(parse_formula(decl.of))
            if not isinstance(value, NodeRef) or not _is_plain_path(decl.of):
                raise _Unresolved(Rule.ALIAS, f"alias target {decl.of!r} is not a tensor path",
                                  "`of` names a derived tensor of this spec or a source path")
            if value.id == node.id:
                raise _Unresolved(Rule.ALIAS, "an alias cannot be its own target",
                                  "point `of` at another tensor")
        else:
            assert decl.formula is not None
            value = resolver.resolve(parse_formula(decl.formula))
    except FormulaError as exc:
        graph.issue(exc.rule, f"{decl.formula or decl.of!r}: {exc.message}", exc.fix, node)
        return
    except _Unresolved as exc:
        graph.issue(exc.rule, f"{decl.formula or decl.of!r}: {exc.message}", exc.fix, node)
        return
    if not isinstance(value, NodeRef):
        graph.issue(Rule.INFERENCE, f"formula {decl.formula!r} is the constant {value!r}, not a "
                    "tensor", "wrap constants in full([shape], value, dtype=...)", node)
        return
    if decl.kind == "view" and not _is_view_chain(graph, value.id):
        graph.issue(Rule.ALIAS, f"view formula {decl.formula!r} uses ops that copy",
                    "a view may only use view ops (slicing, view, reshape, transpose, squeeze, "
                    "...) over one tensor; use kind 'attribute' or 'buffer' for computed values",
                    node)
        return
    node.input = value.id
    graph.g.add_edge(value.id, node.id)


def _is_plain_path(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][\w]*(\.[\w]+)*", text.strip()) is not None


def _is_view_chain(graph: DerivedGraph, node_id: str) -> bool:
    data = graph.g.nodes[node_id]
    if data["kind"] in ("source", "derived"):
        return True
    if data["kind"] != "op" or OPS[data["op"]].kind != "view":
        return False
    refs = refs_in(data["args"])
    return len(refs) == 1 and _is_view_chain(graph, refs[0])


def _check_cycles(graph: DerivedGraph) -> None:
    for component in nx.strongly_connected_components(graph.g):
        if len(component) < 2:
            continue
        sub = graph.g.subgraph(component)
        cycle = [u for u, _ in nx.find_cycle(sub)]
        named = [c for c in cycle if c in graph.derived] or cycle
        start = min(range(len(named)), key=lambda i: _natural_key(named[i]))
        named = named[start:] + named[:start]
        shown = " -> ".join([*named, named[0]])
        graph.issue(Rule.CYCLE, f"derived tensors depend on each other in a cycle: {shown}",
                    "break the cycle: a derived tensor may not depend on itself, directly or "
                    "through others", graph.derived.get(named[0]))


def meta_value(graph: DerivedGraph, node_id: str, cache: dict[str, Any]) -> Any:
    """The node's value on the meta device (shapes and dtypes only)."""
    if node_id in cache:
        return cache[node_id]
    data = graph.g.nodes[node_id]
    if data["kind"] == "source":
        value = torch.empty_strided(data["shape"], data["stride"], dtype=data["dtype"],
                                    device="meta")
    elif data["kind"] == "derived":
        node = graph.derived[node_id]
        value = meta_value(graph, node.input, cache) if node.input else None
    else:
        op = OPS[data["op"]]
        args = substitute(data["args"], lambda r: meta_value(graph, r, cache))
        kwargs = substitute(data["kwargs"], lambda r: meta_value(graph, r, cache))
        if "device" in kwargs:
            kwargs["device"] = "meta"
        fn = op.infer or op.fn
        value = fn(*args, **kwargs)
    cache[node_id] = value
    return value


def _infer(graph: DerivedGraph) -> None:
    cache: dict[str, Any] = {}
    for node_id in graph.ordered():
        if node_id not in graph.derived:
            continue
        node = graph.derived[node_id]
        if node.input is None:
            continue
        try:
            value = meta_value(graph, node_id, cache)
        except (RuntimeError, TypeError, ValueError, IndexError) as exc:
            first = str(exc).strip().split("\n")[0]
            graph.issue(Rule.INFERENCE, f"formula {node.decl.formula or node.decl.of!r} fails on "
                        f"shapes/dtypes: {first}",
                        "check the shapes and dtypes the formula combines", node)
            continue
        if not isinstance(value, torch.Tensor):
            graph.issue(Rule.INFERENCE, f"formula gives a {type(value).__name__}, not a tensor",
                        "make the formula produce a tensor", node)
            continue
        node.meta = value
        _check_declared(graph, node, value)


def _check_declared(graph: DerivedGraph, node: DerivedNode, value: torch.Tensor) -> None:
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
    if decl.kind == "scalar" and value.numel() != 1:
        graph.issue(Rule.MISMATCH, f"a scalar needs one element, the formula gives "
                    f"{list(value.shape)}", "reduce the formula, e.g. amax(x)", node)
    if decl.kind == "alias" and graph.g.nodes.get(node.input, {}).get("kind") == "source":
        src_device = graph.g.nodes[node.input]["device"]
        node.device = src_device
    src_devices = {graph.g.nodes[a]["device"] for a in graph.source_deps()[node.id]}
    if decl.device and src_devices and node.device not in src_devices and decl.kind != "alias":
        graph.issue(Rule.MISMATCH, f"declared device {node.device} but the sources are on "
                    f"{', '.join(sorted(map(str, src_devices)))}",
                    "drop `device` or point it at the right tensor", node)
    elif not decl.device and src_devices:
        node.device = sorted(src_devices, key=str)[0]
