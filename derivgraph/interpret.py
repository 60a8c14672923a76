"""One interpreter over the IR, subclassed by every consumer (``torch.fx.Interpreter`` style).

:class:`Interpreter` walks nodes in topological order and asks three methods for a node's value:
:meth:`~Interpreter.source`, :meth:`~Interpreter.call` and :meth:`~Interpreter.derived`.
Subclasses:

* :class:`MetaInterpreter` — shapes, dtypes and devices on ``meta`` tensors, memoized per
  (op, input layouts, constants), so identical layers are inferred once;
* :class:`EagerInterpreter` — real values from the live sources at compile (reads only);
* :class:`ViewRebuilder` — a view formula replayed over its base's storage;
* :class:`derivgraph.lower.Lowerer` — the reload pass, lowered to grouped instructions.
"""

from __future__ import annotations

from typing import Any

import torch

from .dag import DerivedGraph, freeze, substitute
from .ir import Node, NodeKind
from .ops import OPS, OpDef
from .paths import MISSING, get_path

__all__ = ["EagerInterpreter", "Failed", "Interpreter", "MetaInterpreter", "ViewRebuilder",
           "view_base"]


class Failed:
    """The value of a node that could not be computed (``error`` is None when an input failed)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None):
        self.error = error


def _has_failed(value: Any) -> bool:
    if isinstance(value, Failed):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_failed(v) for v in value)
    if isinstance(value, dict):
        return any(_has_failed(v) for v in value.values())
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
        derived = self.graph.derived[node.id]
        value = self.env[derived.input] if derived.input is not None else Failed()
        return self.derived(node, value)

    # ---- what subclasses override ----------------------------------------------------------
    def source(self, node: Node) -> Any:
        raise NotImplementedError

    def call(self, node: Node, op: OpDef, args: Any, kwargs: dict[str, Any]) -> Any:
        return op.fn(*args, **kwargs)

    def derived(self, node: Node, value: Any) -> Any:
        return value


# ---- shapes and dtypes ----------------------------------------------------------------------------

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
        if _has_failed(args) or _has_failed(kwargs):
            return Failed()
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
            value = (op.infer or op.fn)(*args, **kwargs)
        except (RuntimeError, TypeError, ValueError, IndexError, AttributeError,
                NotImplementedError) as exc:
            return Failed(exc)
        if key is not None:
            _remember(key, value)
        return value


def _remember(key: Any, value: Any) -> None:
    if len(_META_CACHE) >= _META_CACHE_MAX:
        _META_CACHE.clear()
    _META_CACHE[key] = value


# ---- real values ----------------------------------------------------------------------------------

class EagerInterpreter(Interpreter):
    """Every node's real value from the live sources, one op at a time (reads only).

    This is the reference the lowered pass must match bit for bit.
    """

    def __init__(self, graph: DerivedGraph, sources: dict[str, torch.Tensor] | None = None):
        super().__init__(graph)
        self.sources = sources

    def source(self, node: Node) -> Any:
        if self.sources is not None and node.id in self.sources:
            return self.sources[node.id]
        value = get_path(self.graph.model, node.id)
        if value is MISSING:
            raise KeyError(f"source {node.id} is gone from the model")
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

