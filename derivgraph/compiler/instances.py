"""The instance table: one record per template for every layer stamped from it.

:class:`~derivgraph.compiler.stamp.Stamper` stamps a layer by replaying its template's graph
calls. What a later phase needs of the stamped layers is, per template, the template's own nodes
(its derived tensors, then what its calls made, first use first) and, for each stamped layer, its
own nodes in the same positions. :class:`InstanceTable` holds exactly that, once per template: a
*row* per stamped layer (its node ids) and, read across the rows, a *column* per template
position (one template node's counterparts in every layer, in stamping order). No per-layer
object is kept.

:func:`aligned_rows` proves a table instead of trusting how it was built: a row is aligned when
each of its nodes has the template node's kind and op at the same position, and reads the row's
own nodes (or the same shared node) at the template's input positions, so the row's subgraph is
the template's renamed edge for edge. :func:`~derivgraph.compiler.layers.closed_layers` keeps
only aligned rows, so a table whose columns are mis-ordered (a row's nodes in another order, a
row of another layer's nodes) is never taken as its template's by a later phase.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter

from derivgraph.compiler.ir import Node

__all__ = ["InstanceTable", "aligned_rows"]


@dataclass(eq=False)
class InstanceTable:
    """A template's own nodes and, row by row, every layer stamped from it (the same
    positions); column ``k`` is template node ``k``'s counterpart in every row."""

    template: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, k: int) -> list[str]:
        """Template node ``k``'s counterpart in every row, in stamping order."""
        return [row[k] for row in self.rows]

    def ids(self) -> Iterator[str]:
        """Every node of every row, row by row."""
        return chain.from_iterable(self.rows)

    def node_map(self) -> dict[str, str]:
        """Every node of every row -> the template node in the same position."""
        n = len(self.rows)
        return dict(zip(self.ids(), self.template * n))

    def subset(self, keep: list[bool]) -> InstanceTable:
        """The table of the rows where ``keep`` is true (same template, same order)."""
        return InstanceTable(self.template, [r for r, ok in zip(self.rows, keep) if ok])


_kind, _op, _inputs = attrgetter("kind"), attrgetter("op"), attrgetter("inputs")


def aligned_rows(nodes: dict[str, Node], table: InstanceTable) -> list[bool]:
    """Per row of ``table``: whether its nodes have the template's kinds and ops position by
    position and read the row's own nodes (or the same shared node) at the template's input
    positions. Checked column by column: each fact of a column is one C-level sweep compared
    with what the template's node gives, and only a column that differs somewhere is
    compared row by row."""
    template, rows = table.template, table.rows
    n = len(rows)
    where = {t: i for i, t in enumerate(template)}
    columns = list(zip(*rows)) if rows else []
    ok = [True] * n
    for k, t in enumerate(template):
        first = nodes[t]
        column = list(map(nodes.get, columns[k]))
        # each input: the row's own node at a template position, or the one shared node
        parts = [columns[where[r]] if r in where else repeat(r, n) for r in first.inputs]
        want = list(zip(*parts)) if parts else [()] * n
        if None not in column and list(map(_kind, column)) == [first.kind] * n \
                and list(map(_op, column)) == [first.op] * n \
                and list(map(_inputs, column)) == want:
            continue
        ok = [a and node is not None and (node.kind, node.op, node.inputs)
              == (first.kind, first.op, w) for a, node, w in zip(ok, column, want)]
    return ok
