"""The source dependencies of closed stamped rows, read off their template by position.

A closed row (:func:`~derivgraph.compiler.layers.closed_layers`) is its template's subgraph
renamed: each node has the template node's kind and op at the same position and reads the
row's own nodes at the template's input positions, or a shared constant (an op with no
inputs, so no source). So the sources a row's node depends on are the row's nodes at the
positions of the sources its template node depends on. :func:`row_source_deps` computes those
positions once per template and builds every row's sets a column at a time, instead of a
walk over every node of every row (:meth:`DerivedGraph.source_deps
<derivgraph.compiler.graph.DerivedGraph.source_deps>` walks only what is left).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.ir import Node, NodeKind

__all__ = ["row_source_deps", "template_dep_positions"]


def template_dep_positions(nodes: Mapping[str, Node], template: tuple[str, ...],
                           ) -> list[tuple[int, ...]] | None:
    """Per template position: the positions of the template's sources it depends on (in
    ascending order); None when a node reads a node outside the template that is not a
    constant (an op with no inputs), or the template holds a cycle."""
    own = {n: i for i, n in enumerate(template)}
    found: dict[int, frozenset[int]] = {}
    on_stack: set[int] = set()

    def deps(i: int) -> frozenset[int] | None:
        got = found.get(i)
        if got is not None:
            return got
        if i in on_stack:
            return None
        node = nodes[template[i]]
        if node.kind is NodeKind.SOURCE:
            found[i] = frozenset((i,))
            return found[i]
        on_stack.add(i)
        out: frozenset[int] = frozenset()
        for ref in node.inputs:
            at = own.get(ref)
            if at is None:
                outside = nodes.get(ref)
                if outside is None or outside.kind is not NodeKind.OP or outside.inputs:
                    return None
                continue
            sub = deps(at)
            if sub is None:
                return None
            out |= sub
        on_stack.discard(i)
        found[i] = out
        return out

    positions = []
    for i in range(len(template)):
        got = deps(i)
        if got is None:
            return None
        positions.append(tuple(sorted(got)))
    return positions


def row_source_deps(nodes: Mapping[str, Node], tables: Iterable[InstanceTable],
                    read: list[InstanceTable] | None = None) -> dict[str, frozenset[str]]:
    """Every node of every row of ``tables`` (closed rows only) -> the source nodes it
    depends on; the rows of a template whose positions cannot be read
    (:func:`template_dep_positions`) are left out. ``read``: where given, each table whose
    rows are in the answer is appended to it, in order."""
    deps: dict[str, frozenset[str]] = {}
    empty: frozenset[str] = frozenset()
    for table in tables:
        positions = template_dep_positions(nodes, table.template)
        if positions is None or not table.rows:
            continue
        if read is not None:
            read.append(table)
        columns = list(zip(*table.rows))
        sets: dict[tuple[int, ...], list[frozenset[str]]] = {}  # one list per position set
        for k, at in enumerate(positions):
            if not at:
                deps.update(dict.fromkeys(columns[k], empty))
                continue
            made = sets.get(at)
            if made is None:
                made = sets[at] = list(map(frozenset, zip(*[columns[j] for j in at])))
            deps.update(zip(columns[k], made))
    return deps
