"""One interpreter over the IR, subclassed by every consumer (``torch.fx.Interpreter`` style).

:class:`Interpreter` walks nodes in topological order and asks three methods for a node's value:
:meth:`~Interpreter.source`, :meth:`~Interpreter.call` and :meth:`~Interpreter.derived`.
Subclasses:

* :class:`MetaInterpreter` — shapes, dtypes and devices on ``meta`` tensors, memoized per
  (op, input layouts, constants), so identical layers are inferred once;
* :class:`EagerInterpreter` — real values from the live sources at compile (reads only);
* :class:`ViewRebuilder` — a view formula replayed over its base's storage;
* :class:`derivgraph.compiler.lower.Lowerer` — the reload pass, lowered to steps;
* elsewhere: ``planner.CompileValues`` (compile-time values, engine tensors as the engine holds
  them), ``runtime.storage.BoundViews`` (views over bound tensors) and the fold formulas
  (:func:`derivgraph.compiler.fold.evaluate_fold`, an :class:`EagerInterpreter` over a small
  graph).
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph.compiler.graph import DerivedGraph, freeze, substitute
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.owners import PathReader
from derivgraph.ops import OPS, OpDef, broadcast_shapes, dtype_of
from derivgraph.paths import MISSING

__all__ = ["EagerInterpreter", "Failed", "Interpreter", "MetaInterpreter", "ViewRebuilder",
           "has_failed", "view_base"]


class Failed:
    """The value of a node that could not be computed (``error`` is None when an input failed)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None):
        self.error = error


def first_failure(value: Any) -> Failed | None:
    """The first :class:`Failed` in ``value`` (nested lists, tuples, dicts), else None."""
    if isinstance(value, Failed):
        return value
    items = value.values() if isinstance(value, dict) else value \
        if isinstance(value, (list, tuple)) else ()
    for v in items:
        found = first_failure(v)
        if found is not None:
            return found
    return None


def has_failed(value: Any) -> bool:
    """Whether ``value`` is, or holds, a :class:`Failed` (an input that could not be computed)."""
    if isinstance(value, Failed):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_failed(v) for v in value)
    if isinstance(value, dict):
        return any(has_failed(v) for v in value.values())
    return False


class Interpreter:
    """Walks the graph in topological order; ``env`` maps node id -> value."""

    def __init__(self, graph: DerivedGraph):
        self.graph = graph
        self.env: dict[str, Any] = {}

    def run(self, order: list[str] | None = None) -> dict[str, Any]:
        nodes, env = self.graph.nodes, self.env
        for node_id in self.graph.ordered() if order is None else order:
            if node_id not in env:
                env[node_id] = self.run_node(nodes[node_id])
        return env

    def run_node(self, node: Node) -> Any:
        if node.kind is NodeKind.SOURCE:
            return self.source(node)
        if node.kind is NodeKind.OP:
            lookup = self.env.__getitem__
            return self.call(node, OPS[node.op], substitute(node.args, lookup),
                             substitute(node.kwargs, lookup))
        derived = self.graph.derived_view[node.id]  # a held column's nodes made only here
        value = self.env[derived.input] if derived.input is not None else Failed()
        return self.derived(node, value)

    # ---- what subclasses override ----------------------------------------------------------
    def source(self, node: Node) -> Any:
        raise NotImplementedError

    def call(self, node: Node, op: OpDef, args: Any, kwargs: dict[str, Any]) -> Any:
        return op.fn(*args, **kwargs)

    def derived(self, node: Node, value: Any) -> Any:
        return value


# ---- shapes and dtypes ----------

_META_CACHE: dict[Any, Any] = {}
_META_CACHE_MAX = 65536


def _layout_key(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("T", tuple(value.shape), value.stride(), value.dtype)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_layout_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _layout_key(v)) for k, v in value.items())))
    return freeze(value)


class MetaInterpreter(Interpreter):
    """Values on the ``meta`` device; an op that raises gives :class:`Failed`.

    Results are memoized per (op, input shapes/strides/dtypes, constants) across plans, so a
    model of 61 identical layers runs each op's meta kernel once.
    """

    def source(self, node: Node) -> Any:
        key = ("src", node.shape, node.stride, node.dtype)
        value = _META_CACHE.get(key)
        if value is None:
            value = torch.empty_strided(node.shape, node.stride, dtype=node.dtype, device="meta")
            _remember(key, value)
        return value

    def call(self, node: Node, op: OpDef, args: Any, kwargs: dict[str, Any]) -> Any:
        failed = first_failure(args) or first_failure(kwargs)
        if failed is not None:  # carry the error up: it is reported at the derived tensor
            return failed
        if "device" in kwargs:
            kwargs["device"] = "meta"
        try:
            key = (node.op, id(op), _layout_key(args), _layout_key(kwargs))
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in _META_CACHE:
            return _META_CACHE[key]
        try:
            value = _fast_meta(node.op, op, args, kwargs)
            if value is None:
                value = (op.infer or op.fn)(*args, **kwargs)
        except (RuntimeError, TypeError, ValueError, LookupError, AttributeError,
                ArithmeticError, NotImplementedError) as exc:
            return Failed(exc)
        if key is not None:
            _remember(key, value)
        return value


_BINARY = frozenset({"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
_FLOAT_UNARY = frozenset({"reciprocal", "exp", "log", "sqrt", "rsqrt"})
_SAME_UNARY = frozenset({"abs", "neg"})
_CREATE = frozenset({"full", "ones", "zeros"})
_BUILTIN = {name: OPS[name].fn for name in
            _BINARY | _FLOAT_UNARY | _SAME_UNARY | _CREATE | {"cat", "stack", "clamp"}
            if name in OPS}




def _meta(shape: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(tuple(shape), dtype=dtype, device="meta")


def _fast_meta(name: str | None, op: OpDef, args: Any, kwargs: dict[str, Any]) -> Any:
    """Shape/dtype rules for built-in elementwise, joining and creation ops.

    Running a compute kernel on ``meta`` makes torch import its Python meta registrations
    (seconds, once per process); these rules give the same shapes and dtypes without them.
    ``None`` falls back to the op on meta tensors.
    """
    if name is None or op.infer is not None or _BUILTIN.get(name) is not op.fn:
        return None
    if name in _BINARY and len(args) == 2 and not kwargs:
        a, b = args
        tensors = [x for x in (a, b) if isinstance(x, torch.Tensor)]
        if not tensors or not all(isinstance(x, (torch.Tensor, int, float)) for x in (a, b)) \
                or any(isinstance(x, bool) for x in (a, b)):
            return None
        dtype = torch.result_type(a, b)
        if name == "div" and not (dtype.is_floating_point or dtype.is_complex):
            dtype = torch.get_defaultdtype_of()
        return _meta(broadcast_shapes(*(tuple(t.shape) for t in tensors)), dtype)
    if name in _FLOAT_UNARY | _SAME_UNARY and len(args) == 1 and not kwargs:
        (x,) = args
        if not isinstance(x, torch.Tensor) or x.dtype == torch.bool or x.is_complex():
            return None
        dtype = x.dtype
        if name in _FLOAT_UNARY and not dtype.is_floating_point:
            dtype = torch.get_defaultdtype_of()
        return _meta(x.shape, dtype)
    if name == "clamp" and args and isinstance(args[0], torch.Tensor) \
            and args[0].dtype.is_floating_point and not kwargs and all(
                v is None or (isinstance(v, float)) for v in args[1:]):
        return _meta(args[0].shape, args[0].dtype)
    if name in _CREATE and args and isinstance(args[0], (list, tuple)) \
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in args[0]):

        dtype_arg = kwargs.get("dtype", args[2 if name == "full" else 1]
                               if len(args) > (2 if name == "full" else 1) else "float32")
        try:
            dtype = dtype_of(dtype_arg)
        except KeyError:
            return None
        return _meta(args[0], dtype)
    if name in ("cat", "stack") and args and isinstance(args[0], (list, tuple)) and args[0] \
            and not kwargs and all(isinstance(t, torch.Tensor) for t in args[0]):
        parts = list(args[0])
        dim = args[1] if len(args) > 1 else 0
        if not isinstance(dim, int) or len({t.dtype for t in parts}) != 1:
            return None
        first = parts[0]
        if name == "stack":
            if any(t.shape != first.shape for t in parts):
                return None
            nd = first.dim() + 1
            dim = dim + nd if dim < 0 else dim
            if not 0 <= dim < nd:
                return None
            shape = list(first.shape)
            shape.insert(dim, len(parts))
            return _meta(shape, first.dtype)
        nd = first.dim()
        if nd == 0 or any(t.dim() != nd for t in parts):
            return None
        dim = dim + nd if dim < 0 else dim
        if not 0 <= dim < nd or any(t.shape[:dim] != first.shape[:dim] or
                                    t.shape[dim + 1:] != first.shape[dim + 1:] for t in parts):
            return None
        shape = list(first.shape)
        shape[dim] = sum(t.shape[dim] for t in parts)
        return _meta(shape, first.dtype)
    return None


def _remember(key: Any, value: Any) -> None:
    if len(_META_CACHE) >= _META_CACHE_MAX:
        _META_CACHE.clear()
    _META_CACHE[key] = value


# ---- real values ----------

class EagerInterpreter(Interpreter):
    """Every node's real value from the live sources, one op at a time (reads only).

    This is the reference the lowered pass must match bit for bit.
    """

    def __init__(self, graph: DerivedGraph, sources: dict[str, torch.Tensor] | None = None):
        super().__init__(graph)
        self.sources = sources
        self.paths = PathReader(graph.model)  # one run reads; nothing is written meanwhile

    def source(self, node: Node) -> Any:
        return self.source_at(node.id)

    def source_at(self, path: str) -> Any:
        """The live source tensor at ``path`` (as read by building, else read now)."""
        if self.sources is not None and path in self.sources:
            return self.sources[path]
        value = self.paths.get(path)
        if value is MISSING:
            raise KeyError(f"source {path} is gone from the model")
        return value


class ViewRebuilder(Interpreter):
    """Replays a view chain (view ops over one tensor) over ``base``."""

    def __init__(self, graph: DerivedGraph, base: torch.Tensor):
        super().__init__(graph)
        self.base = base

    def rebuild(self, node_id: str) -> torch.Tensor:
        node = self.graph.nodes[node_id]
        if node.kind is not NodeKind.OP:
            return self.base
        inner = self.rebuild(node.inputs[0])
        args = substitute(node.args, lambda _ref: inner)
        return self.call(node, OPS[node.op], args, node.kwargs)


def view_base(graph: DerivedGraph, node_id: str) -> str:
    """The first non-op node under a chain of view ops."""
    node = graph.nodes[node_id]
    while node.kind is NodeKind.OP:
        node = graph.nodes[node.inputs[0]]
    return node.id

