"""Graph passes that validate a bound graph after shape inference and before any source is read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from derivgraph.compiler.graph import DerivedGraph, DerivedNode, NodeRef
from derivgraph.compiler.infer import first_feeds
from derivgraph.compiler.interpret import EagerInterpreter
from derivgraph.compiler.ir import NodeKind
from derivgraph.errors import Rule, SourceLocation, SpecIssue
from derivgraph.ops.index import INDEX_ARGS

__all__ = ["fault_issue", "index_issues", "view_issues"]


def view_issues(views: Iterable[tuple[DerivedNode, Any, Any]]) -> list[SpecIssue]:
    """Views must be views: each (node, view, base) whose view does not share its base's
    storage is a DG010 issue. Checked on the evaluated values before any tensor is touched,
    and on the bound storage after."""
    issues = []
    for node, view, base in views:
        if isinstance(view, torch.Tensor) and isinstance(base, torch.Tensor) and \
                view.untyped_storage().data_ptr() != base.untyped_storage().data_ptr():
            issues.append(SpecIssue(Rule.ALIAS, f"{node.id} is not a view of its base's storage",
                                    "use only view ops in a view formula", node.decl.location,
                                    node.id))
    return issues


def index_issues(graph: DerivedGraph) -> None:
    """Refuse an index that reads a weight (DG041) or falls outside its dim (DG042).

    Runs after shape inference and before any source is read: the index is computed from
    params alone (once, on the module's device), and checked against the inferred size of the
    gathered dim. Issues go to ``graph.issues`` at the first derived tensor the gather feeds.
    """
    if any(i.rule == Rule.RESOURCE_LIMIT for i in graph.issues):
        return  # an oversized index is never computed (DG016 already reported)
    if graph.op_names.isdisjoint(INDEX_ARGS):
        return  # no gather op anywhere: nothing to sweep the graph for
    nodes = graph.nodes
    gathers = [n for n in graph.ordered()
               if nodes[n].kind is NodeKind.OP and nodes[n].op in INDEX_ARGS]
    if not gathers:
        return
    deps = graph.source_deps()
    feeds = first_feeds(graph)
    eager = EagerInterpreter(graph)
    for n in gathers:
        node = nodes[n]
        where, dim_at = INDEX_ARGS[node.op]  # type: ignore[index]
        index, dim = node.args[where], node.args[dim_at]
        if not isinstance(index, NodeRef):
            continue  # a Python constant: the meta rule already refused it (DG013)
        owner = graph.derived.get(n) or feeds.get(n)
        if deps[index.id]:
            graph.issue(Rule.INDEX_NOT_CONSTANT,
                        f"{node.op}'s index reads {', '.join(sorted(deps[index.id]))}: an "
                        "index must depend on params alone",
                        "build the index from params and config numbers (arange, "
                        "repeat_interleave, arithmetic); a weight-dependent gather is not "
                        "supported", owner)
            continue
        x = graph.meta_env.get(node.inputs[0]) if node.inputs else None
        if not isinstance(x, torch.Tensor) or not isinstance(graph.meta_env.get(n), torch.Tensor):
            continue  # inference failed: reported as DG013
        try:
            with torch.no_grad():
                value = eager.run(_cone(graph, index.id))[index.id]
        except (RuntimeError, TypeError, ValueError, IndexError) as exc:
            graph.issue(Rule.INFERENCE, f"{node.op}'s index cannot be computed: {exc}",
                        "check the params the index is built from", owner)
            continue
        if not isinstance(value, torch.Tensor):  # e.g. read from an engine-computed tensor
            graph.issue(Rule.INDEX_NOT_CONSTANT, f"{node.op}'s index is not computable from "
                        "params alone", "build the index from params and config numbers", owner)
            continue
        size = x.shape[dim % x.dim()] if x.dim() else 1
        if value.numel() and (int(value.min()) < 0 or int(value.max()) >= size):
            graph.issue(Rule.INDEX_OUT_OF_RANGE,
                        f"{node.op}'s index spans {int(value.min())}..{int(value.max())} but dim "
                        f"{dim} has {size} elements",
                        "offset the index into 0..size-1 (negative indices are not wrapped)",
                        owner)


def _cone(graph: DerivedGraph, node_id: str) -> list[str]:
    """``node_id`` and everything it reads, in topological order."""
    need, stack = {node_id}, [node_id]
    while stack:
        for ref in graph.nodes[stack.pop()].inputs:
            if ref not in need:
                need.add(ref)
                stack.append(ref)
    return [n for n in graph.ordered() if n in need]


def fault_issue(graph: DerivedGraph, node_id: str, exc: BaseException) -> SpecIssue:
    """A ``DG030`` issue for an op that raised on the model's real values, at the derived
    tensor it feeds (whose spec file:line the issue carries)."""
    owner = graph.derived.get(node_id) or first_feeds(graph).get(node_id)
    node = graph.nodes[node_id]
    what = f"{node.op}(...)" if node.kind is NodeKind.OP else node_id
    return SpecIssue(Rule.PASS_FAULT, f"{what} failed on the model's values: "
                     f"{type(exc).__name__}: {exc}",
                     "fix the formula or the op (nothing was written)",
                     owner.decl.location if owner else SourceLocation(),
                     owner.id if owner else node_id)
