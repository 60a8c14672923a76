"""Stamped layers past resolution: which layers are provably their template's nodes renamed.

:mod:`derivgraph.compiler.stamp` records, for every stamped layer, its own nodes (its derived
tensors, then every node its replayed calls made) position by position with the template's.
A later phase may reuse a template's decision for such a layer only when the layer's subgraph
is the template's renamed, with nothing else attached to it. :func:`closed_layers` proves that
once per graph version, in one sweep per layer:

* the template is *closed*: every input of its nodes is its own or a shared constant (an op
  with no inputs, made once by CSE for every layer), every user of its nodes is its own, and
  every derived tensor has an input (no engine-computed value);
* the layer's nodes are distinct, and their users number exactly the template's: the replay
  made the template's edges renamed, so no node outside the layer reads one of its nodes
  (another spec's formula sharing its op through CSE, or reading its derived tensor).

What else a phase reads per layer (layouts, storage, addresses) it checks itself
(:mod:`derivgraph.compiler.infer`, :mod:`derivgraph.compiler.lower`).
"""

from __future__ import annotations

from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.stamp import StampedLayer

__all__ = ["closed_layers", "layer_map"]


def closed_layers(graph: DerivedGraph) -> list[StampedLayer]:
    """The stamped layers whose subgraph is their template's renamed, and nothing else's."""
    version, found = graph.layer_cache
    if version == graph.ir.version and found is not None:
        return found
    users = graph.ir.users
    totals: dict[tuple[str, ...], int] = {}  # template -> its users' count (-1: not closed)
    found = []
    for layer in graph.stamps:
        if not layer.ids:  # nothing of its own (folds only): nothing to take from a template
            continue
        total = totals.get(layer.template)
        if total is None:
            total = totals[layer.template] = _closed_users(graph, layer.template)
        if total >= 0 and len(set(layer.ids)) == len(layer.ids) \
                and not _users_differ(users, layer.ids, total):
            found.append(layer)
    graph.layer_cache = (graph.ir.version, found)
    return found


def _users_differ(users: dict[str, list[str]], ids: tuple[str, ...], total: int) -> bool:
    """Whether the layer's nodes have another number of users than its template's."""
    return sum(map(len, map(users.__getitem__, ids))) != total


def _closed_users(graph: DerivedGraph, template: tuple[str, ...]) -> int:
    """How many users the template's nodes have; -1 when it is not closed."""
    own, nodes, users, derived = set(template), graph.nodes, graph.ir.users, graph.derived
    total = 0
    for node_id in template:
        node = nodes[node_id]
        if node.kind is NodeKind.DERIVED and derived[node_id].input is None:
            return -1
        for ref in node.inputs:
            if ref not in own and (nodes[ref].kind is not NodeKind.OP or nodes[ref].inputs):
                return -1
        found = users[node_id]
        if any(u not in own for u in found):
            return -1
        total += len(found)
    return total


def layer_map(layers: list[StampedLayer]) -> dict[str, str]:
    """Every node of ``layers`` -> the template node in the same position."""
    out: dict[str, str] = {}
    for layer in layers:
        out.update(zip(layer.ids, layer.template))
    return out
