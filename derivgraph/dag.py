"""The DAG of derived tensors: node kinds, references, and the graph container.

Nodes (attribute ``kind``):

* ``source`` — a tensor the engine owns (a weight, a scale), read at its path each run;
* ``op`` — an intermediate: a registered op over other nodes and Python constants. Identical
  subexpressions share one node across specs and layers (common-subexpression elimination);
* ``derived`` — a declared derived tensor, bound to an owner; its one input edge is its value.

This module holds data structures and queries only; :mod:`derivgraph.graph` builds the graph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
from torch import nn

from .bind import BoundSpec
from .errors import SourceLocation, SpecIssue, SpecValidationError
from .spec import DerivedTensor

__all__ = ["DerivedGraph", "DerivedNode", "NodeRef", "freeze", "natural_key", "refs_in",
           "substitute"]


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


def natural_key(path: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def freeze(value: Any) -> Any:
    if isinstance(value, NodeRef):
        return ("ref", value.id)
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(freeze(v) for v in value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, freeze(v)) for k, v in value.items())))
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
        key = (name, freeze(args), freeze(kwargs))
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
            self._order = list(nx.lexicographical_topological_sort(self.g, key=natural_key))
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

    def raise_if_issues(self) -> None:
        if self.issues:
            raise SpecValidationError(self.issues)
