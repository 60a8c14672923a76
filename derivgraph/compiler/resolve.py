"""Formula resolution by partial evaluation against one bound module.

Params, shapes and config numbers fold into Python constants at compile time (a frozen plan);
tensors become graph nodes, with identical subexpressions shared.
"""

from __future__ import annotations

import functools
from itertools import repeat
from operator import is_
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from derivgraph.compiler.bind import BoundSpec
from derivgraph.compiler.graph import DerivedGraph, DerivedNode, NodeRef, refs_in
from derivgraph.compiler.reads import (
    OpCall,
    Probe,
    Reads,
    SourceCall,
    probe_derived,
    probe_each,
    probe_meta,
    probe_path,
)
from derivgraph.errors import LimitError, Rule, SpecIssue
from derivgraph.limits import check_constant, check_constant_fold
from derivgraph.ops import DTYPES, OPS, OpKind
from derivgraph.paths import MISSING, get_path, join
from derivgraph.spec.expr import (
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
from derivgraph.spec.kinds import TensorKind, is_fold
from derivgraph.spec.model import DerivedTensor

if TYPE_CHECKING:
    from derivgraph.compiler.stamp_columns import HopSweeps

__all__ = ["Resolver", "device_of", "devices_of", "parse_cached", "resolve_params"]

_FOLDABLE = {"add", "sub", "mul", "div", "floordiv", "pow", "neg"}


@functools.lru_cache(maxsize=8192)
def parse_cached(text: str) -> Expr:
    """:func:`~derivgraph.spec.expr.parse_formula`, cached: 61 layers of one spec parse once.

    The expression tree is frozen (immutable), so sharing it is safe; errors are not cached.
    """
    return parse_formula(text)




class Resolver:
    """Partially evaluates one formula against one bound module."""

    def __init__(self, graph: DerivedGraph, bound: BoundSpec, node: DerivedNode | None,
                 params: dict[str, Any], device: torch.device, reads: Reads | None = None):
        self.graph, self.bound, self.node = graph, bound, node
        self.params, self.device = params, device
        self.locals: dict[str, Any] = {}
        self.reads = reads  # every model fact the resolution reads, and its graph calls

    # ---- every read of the model or the graph, and every graph call, goes through these -----
    def _fact(self, probe: Probe, *args: Any) -> tuple[Any, Any]:
        """``probe(graph, bound, params, *args)``: (fact, object), the fact recorded."""
        fact, obj = probe(self.graph, self.bound, self.params, *args)
        if self.reads is not None:
            self.reads.note(probe, args, fact)
        return fact, obj

    def _source(self, rel: str, tensor: torch.Tensor) -> NodeRef:
        self._fact(probe_derived, rel)  # a source path that is a derived tensor is its node
        ref = self.graph.source(self.bound.qualify(rel), tensor)
        if self.reads is not None:
            self.reads.call(SourceCall(rel))
        return ref

    def _op(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> NodeRef:
        ref = self.graph.op(name, args, kwargs)
        if self.reads is not None:
            self.reads.call(OpCall(name, args, kwargs, ref.id))
        return ref

    def fail(self, rule: str, message: str, fix: str) -> FormulaError:
        return FormulaError(rule, message, fix)

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
                return self._op("getitem", (base, index), {})
            try:
                return base[index]
            except IndexError as exc:
                raise self.fail(Rule.INFERENCE, f"cannot index {base!r} with {index!r}: {exc}",
                                "index within the sequence's length") from None
            except (TypeError, KeyError) as exc:
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
        candidates = [d for d in self.bound.spec.derived if d.name == name and d is not me
                      and not is_fold(d)]  # fold hook: a fold's name is its source's
        if not candidates:
            return None
        primary = [d for d in candidates if d.kind != TensorKind.ALIAS] or candidates
        if len(primary) > 1:
            raise self.fail(Rule.UNKNOWN_NAME, f"{name!r} names {len(primary)} derived tensors",
                            "give the derived tensors distinct names")
        d = primary[0]
        return NodeRef(join(self.bound.qualify(d.owner), d.name))

    def _module_path(self, parts: list[str]) -> Any:
        fact, obj = self._fact(probe_path, tuple(parts))
        if fact[0] == "missing":
            i = fact[1]
            where = ".".join(parts[:i]) or type(self.bound.module).__name__
            raise self.fail(
                Rule.UNKNOWN_NAME if i == 0 else Rule.MISSING_SOURCE,
                f"{'.'.join(parts)!r}: {where} has no attribute {parts[i]!r}",
                "use a param, a derived tensor of this spec, a dtype, or an attribute path "
                f"that exists on {type(self.bound.module).__name__} after loading",
            )
        if fact[0] == "tensor" and fact[1] < len(parts):
            i = fact[1]
            if parts[i].isdigit():  # x.0 is x[0]: an index into the source tensor (bug A)
                ref = self._source(".".join(parts[:i]), obj)
                return self._tensor_attr(ref, parts[i:])
            # reading .shape/.dtype of a tensor needs no graph node
            return self._tensor_attr(NodeRef(""), parts[i:], obj)
        path = ".".join(parts)
        if isinstance(obj, torch.Tensor):
            return self._source(path, obj)
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
            attr = rest[0]
            if attr.isdigit():  # d[0] on a tensor (flattened to the path d.0): index it
                value = self._op("getitem", (value, int(attr)), {})
                return self._tensor_attr(value, rest[1:], None)
            meta = self._meta_of(value, live)
            if attr == "shape" and meta is not None:
                shape = tuple(meta.shape)
                return shape if len(rest) == 1 else _index_seq(shape, rest[1:], self)
            if attr == "dtype" and meta is not None and len(rest) == 1:
                return str(meta.dtype).removeprefix("torch.")
            raise self.fail(Rule.UNKNOWN_NAME, f"tensor attribute {'.'.join(rest)!r} is not "
                            "supported", "only .shape, .shape[i] and .dtype can be read")
        for part in rest:
            if part.isdigit() and isinstance(value, (tuple, list)) and int(part) >= len(value):
                raise self.fail(Rule.INFERENCE, f"index {part} is out of range for {value!r} "
                                f"({len(value)} items)", "index within the sequence's length")
            value = get_path(value, part)
            if value is MISSING:
                raise self.fail(Rule.UNKNOWN_NAME, f"no attribute {part!r}",
                                "check the attribute path")
        return tuple(value) if isinstance(value, torch.Size) else value

    def _meta_of(self, ref: NodeRef, live: torch.Tensor | None) -> torch.Tensor | None:
        if live is not None:
            return live
        fact, meta = self._fact(probe_meta, self.bound.relative(ref.id))
        if meta is None:
            raise self.fail(Rule.UNKNOWN_NAME, f"the shape of derived {ref.id} is not known "
                            "here", "declare `shape` and `dtype` on that derived tensor, or "
                            "read the shape of a source instead")
        return meta

    def _comprehension(self, e: Comp) -> list[Any]:
        module = self.bound.module
        hits = self._fact(probe_each, e.pattern)[0]
        if not hits:
            raise self.fail(Rule.MISSING_SOURCE, f"each({e.pattern!r}) matches no parameter or "
                            f"buffer of {type(module).__name__}",
                            "check the pattern against model.named_parameters()")
        out = []
        for name in hits:
            _, tensor = self._fact(probe_path, tuple(name.split(".")))
            self.locals[e.var] = self._source(name, tensor)
            out.append(self.resolve(e.element))
        self.locals.pop(e.var, None)
        return out

    def _call(self, e: Call) -> Any:
        op = OPS[e.op]
        args = tuple(self.resolve(a) for a in e.args)
        kwargs = {k: self.resolve(v) for k, v in e.kwargs}
        if e.op in _FOLDABLE and not refs_in(args) and not refs_in(kwargs):
            try:
                check_constant_fold(e.op, args)  # bounded constant folding (DG016)
                return check_constant(op.fn(*args, **kwargs))
            except LimitError as exc:
                raise self.fail(exc.rule, exc.message, exc.fix) from None
            except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
                raise self.fail(Rule.INFERENCE, f"{e.op}{args}: {exc}",
                                "fix the constants") from None
        if op.kind is OpKind.CREATE:
            kwargs["device"] = self.device
        return self._op(e.op, args, kwargs)


def _index_seq(seq: tuple[Any, ...], rest: list[str], resolver: Resolver) -> Any:
    value: Any = seq
    for part in rest:
        if not part.isdigit():
            raise resolver.fail(Rule.UNKNOWN_NAME, f"cannot read {part!r} of a shape",
                                "index shapes with integers: x.shape[0]")
        if int(part) >= len(value):
            raise resolver.fail(Rule.INFERENCE, f"shape index {part} is out of range for a "
                                f"shape of {len(value)} dims {list(value)}",
                                "index the dims the tensor has")
        value = value[int(part)]
    return value


def device_of(bound: BoundSpec, decl: DerivedTensor,
              plain: dict[type, bool] | None = None) -> torch.device:
    """The device of ``decl``'s tensor on ``bound`` (:func:`devices_of`'s rule)."""
    return _device_of(bound.module, decl, plain)


def devices_of(modules: list[nn.Module], decl: DerivedTensor,
               plain: dict[type, bool] | None = None,
               sweeps: HopSweeps | None = None) -> list[torch.device]:
    """The device of ``decl``'s tensor on each of ``modules`` (a column's: no bound spec
    read): its declared one, else the module's first parameter's (or buffer's). ``plain``
    memoizes :func:`_plain_members` per module class for one build. Where no device is
    declared and the modules are of one class whose ``parameters()`` is ``nn.Module``'s
    walk (its own parameters first), the build's kept first-hop sweeps (``sweeps``,
    :meth:`HopSweeps.own_first <derivgraph.compiler.stamp_columns.HopSweeps.own_first>`)
    may prove every module's first own parameter and its device: that device, each row's."""
    if sweeps is not None and not decl.device and modules:
        cls = type(modules[0])
        if all(map(is_, map(type, modules), repeat(cls))) and _plain(cls, plain):
            device = sweeps.own_first(modules)
            if device is not None:
                return [device] * len(modules)
    return [_device_of(module, decl, plain) for module in modules]


def _plain(cls: type, plain: dict[type, bool] | None) -> bool:
    """:func:`_plain_members` of ``cls``, memoized in ``plain`` where given."""
    if plain is None:
        return _plain_members(cls)
    own = plain.get(cls)
    if own is None:
        own = plain[cls] = _plain_members(cls)
    return own


def _device_of(module: nn.Module, decl: DerivedTensor,
               plain: dict[type, bool] | None) -> torch.device:
    """:func:`devices_of`'s rule on one module."""
    if decl.device:
        if decl.device == "cpu" or decl.device.startswith("cuda") or decl.device == "meta":
            return torch.device(decl.device)
        value = get_path(module, decl.device)
        if isinstance(value, torch.Tensor):
            return value.device
        if isinstance(value, (str, torch.device)):
            return torch.device(value)
    if _plain(type(module), plain):  # the first of parameters(): the module's own, if any
        for t in module._parameters.values():
            if t is not None:
                return t.device
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return torch.device("cpu")


def _plain_members(cls: type) -> bool:
    """Whether ``cls.parameters()`` is ``nn.Module``'s own walk (its own parameters first)."""
    return all(getattr(cls, name) is getattr(nn.Module, name) for name in
               ("parameters", "named_parameters", "_named_members", "named_modules"))


def resolve_params(graph: DerivedGraph, bound: BoundSpec,
                   reads: Reads | None = None) -> dict[str, Any] | None:
    """The spec's params on ``bound`` (None: an issue was reported); ``reads`` records the
    model facts and graph calls of the resolution (:mod:`derivgraph.compiler.stamp_params`)."""
    params: dict[str, Any] = {}
    resolver = Resolver(graph, bound, None, params, torch.device("meta"), reads)
    for name, text in bound.spec.params.items():
        try:
            value = resolver.resolve(parse_cached(text))
        except FormulaError as exc:
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
