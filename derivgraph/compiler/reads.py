"""The model facts a formula's resolution reads, recorded as it reads them.

Every read the :class:`~derivgraph.compiler.resolve.Resolver` makes of the bound module or of
the graph goes through one of the probes below: a pure function of (graph, bound spec, params,
arguments) that returns ``(fact, object)``. The fact is a hashable summary of everything the
resolver branches on (a tensor's class, shape, stride, dtype and device; a config value; an
``each()`` expansion; whether a path is a derived tensor); the object is what it then uses.
:class:`Reads` keeps the facts and the graph calls of one bound spec, so that
:mod:`derivgraph.compiler.stamp` can prove another layer would resolve the same way by running
the same probes on it.
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from derivgraph.compiler.bind import BoundSpec
from derivgraph.compiler.graph import DerivedGraph, natural_key
from derivgraph.compiler.ir import NodeKind
from derivgraph.ops import DTYPES
from derivgraph.paths import MISSING, get_path

__all__ = ["Call", "OpCall", "Probe", "Reads", "SourceCall", "probe_derived", "probe_each",
           "probe_meta", "probe_path"]

#: probe(graph, bound, params, *args) -> (fact, object)
Probe = Callable[..., tuple[Any, Any]]


class _Opaque:
    """A fact that equals nothing else: a value the key cannot describe."""

    __slots__ = ()


def _freeze(value: Any, top: bool = False) -> Any:
    """A hashable, type-exact summary of a config value (``_Opaque`` when there is none).

    An object with a number or string ``value`` is summarised by it only where the resolver
    reads nothing else of it: at the top of a path (it resolves to ``.value``), or an enum.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, (torch.dtype, torch.device)):
        return (type(value).__name__, str(value))
    if isinstance(value, (tuple, list)):  # torch.Size too
        items = tuple(_freeze(v) for v in value)
        return _Opaque() if any(isinstance(i, _Opaque) for i in items) else \
            (type(value).__name__, items)
    inner = getattr(value, "value", None)
    if isinstance(inner, (int, float, str)) and (top or isinstance(value, enum.Enum)):
        return ("valued", type(value).__module__, type(value).__qualname__, _freeze(inner))
    return _Opaque()


def layout(tensor: torch.Tensor) -> tuple[Any, ...]:
    """What resolution reads of a tensor: its class, shape, stride, dtype and device."""
    return (type(tensor), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype,
            tensor.device)


def probe_path(graph: DerivedGraph, bound: BoundSpec, params: dict[str, Any],
               parts: tuple[str, ...]) -> tuple[Any, Any]:
    """Walk ``parts`` from the module: missing at i, a tensor at i, or a value."""
    obj: Any = bound.module
    for i, part in enumerate(parts):
        if isinstance(obj, torch.Tensor):
            return ("tensor", i, layout(obj)), obj
        obj = get_path(obj, part)
        if obj is MISSING:
            return ("missing", i), None
    if isinstance(obj, torch.Tensor):
        return ("tensor", len(parts), layout(obj)), obj
    return ("value", _freeze(obj, top=True)), obj


def probe_derived(graph: DerivedGraph, bound: BoundSpec, params: dict[str, Any],
                  rel: str) -> tuple[Any, Any]:
    """Whether the path ``rel`` from the module is a derived tensor (then it is not a source)."""
    return bound.qualify(rel) in graph.derived_ids, None


def probe_meta(graph: DerivedGraph, bound: BoundSpec, params: dict[str, Any],
               rel: str | None) -> tuple[Any, Any]:
    """The meta tensor of a graph node at ``rel`` (a source's layout, or a derived tensor's
    declared shape and dtype), None when it is not known."""
    node_id = None if rel is None else bound.qualify(rel)
    data = graph.nodes.get(node_id) if node_id is not None else None
    meta = None
    if data is not None and data.kind is NodeKind.SOURCE:
        meta = torch.empty(data.shape, dtype=data.dtype, device="meta")
    else:
        node = graph.derived_node(node_id) if node_id is not None else None
        if node is not None and node.decl.shape is not None and node.decl.dtype is not None:
            shape = [params.get(s, s) if isinstance(s, str) else s for s in node.decl.shape]
            meta = torch.empty(shape, dtype=DTYPES[node.decl.dtype], device="meta")
    return (None if meta is None else (tuple(meta.shape), meta.dtype)), meta


def probe_each(graph: DerivedGraph, bound: BoundSpec, params: dict[str, Any],
               pattern: str) -> tuple[Any, Any]:
    """The parameter and buffer names ``each(pattern)`` expands to, in natural order."""
    module = bound.module
    names = [n for n, _ in module.named_parameters()] + [n for n, _ in module.named_buffers()]
    hits = tuple(sorted({n for n in names if fnmatch.fnmatchcase(n, pattern)}, key=natural_key))
    return hits, None


class SourceCall(NamedTuple):
    """A recorded ``graph.source`` call: the source at ``rel`` (a path from the module)."""

    rel: str


class OpCall(NamedTuple):
    """A recorded ``graph.op`` call and the node it gave (``result``)."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: str


#: one recorded graph call
Call = SourceCall | OpCall


class Reads:
    """The facts one bound spec's resolution read, and the graph calls it made, in order."""

    def __init__(self) -> None:
        self.facts: dict[tuple[Probe, tuple[Any, ...]], Any] = {}
        self.calls: list[Call] = []
        self.keyable = True  # False once a fact could not be summarised
        # the facts compiled into checks, by derivgraph.compiler.stamp.facts_hold (at the
        # first check: a template's reads are complete when it is kept)
        self.checks: Any = None

    def note(self, probe: Probe, args: tuple[Any, ...], fact: Any) -> None:
        if isinstance(fact, tuple) and fact and isinstance(fact[-1], _Opaque):
            self.keyable = False  # ("value", <a value the key cannot describe>)
        self.facts.setdefault((probe, args), fact)

    def call(self, item: Call) -> None:
        self.calls.append(item)
