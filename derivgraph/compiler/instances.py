"""The instance table: one record per template for every layer stamped from it.

:class:`~derivgraph.compiler.stamp.Stamper` stamps a layer by replaying its template's graph
calls. What a later phase needs of the stamped layers is, per template, the template's own nodes
(its derived tensors, then what its calls made, first use first) and, for each stamped layer, its
own nodes in the same positions. :class:`InstanceTable` holds exactly that, once per template: a
*row* per stamped layer (its node ids) and, read across the rows, a *column* per template
position (one template node's counterparts in every layer, in stamping order). No per-layer
object is kept.

:func:`consistent_rows` proves a stamped table from its own record instead of the rows' nodes:
each row keeps its module path and the op count before its replay (:meth:`InstanceTable.add_row`),
and a row that nothing outside opened is exactly what its replay made (a path position is the
module path + the template's relative path, an op position the next number after the count,
a derived tensor's value the row's node at its template's value's position), so its subgraph
is the template's renamed by construction; the check is that the recorded ids and values are
those (:func:`~derivgraph.compiler.layers.closed_layers` refuses a row that is not: a
stamper bug). :func:`aligned_rows` proves a table with no record from the nodes: a row is
aligned when each of its nodes has the template node's kind and op at the same position, and
reads the row's own nodes (or the same shared node) at the template's input positions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import add, attrgetter, is_not
from typing import Any

from derivgraph.compiler.ir import Node

__all__ = ["InstanceTable", "OpSlot", "PathSlot", "Recipe", "aligned_rows", "consistent_rows",
           "row_mismatch", "row_recipe", "run_column"]


@dataclass(eq=False)
class InstanceTable:
    """A template's own nodes and, row by row, every layer stamped from it (the same
    positions); column ``k`` is template node ``k``'s counterpart in every row."""

    template: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    # the record of each row's replay (empty when the table was not stamped): the template's
    # module path, and per row its module path and the op count before its replay
    base: str = ""
    prefixes: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    # template position -> the (shape, stride, dtype, device) every row's replay gives its
    # source there: the template's probes proved it (each row's probes gave the same facts)
    layouts: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    layouts_hold: bool = True  # false when a row's replay read such a source itself
    # every column's ids (the rows zipped), for the rows list below at the length below (see
    # :meth:`columns`)
    _columns: list[tuple[str, ...]] = field(default_factory=list, init=False, repr=False)
    _columns_of: tuple[list[tuple[str, ...]] | None, int] = field(default=(None, 0),
                                                                  init=False, repr=False)

    def add_row(self, row: tuple[str, ...], prefix: str, start: int) -> None:
        """Append a stamped layer's row with its record (module path, op count before)."""
        self.rows.append(row)
        self.prefixes.append(prefix)
        self.starts.append(start)

    def add_rows(self, rows: list[tuple[str, ...]], prefixes: list[str],
                 starts: list[int]) -> None:
        """:meth:`add_row` of each row, in order."""
        self.rows += rows
        self.prefixes += prefixes
        self.starts += starts

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, k: int) -> list[str]:
        """Template node ``k``'s counterpart in every row, in stamping order (a new list;
        read from :meth:`columns`)."""
        return list(self.columns()[k]) if self.rows else []

    def columns(self) -> list[tuple[str, ...]]:
        """Every template position's column (the rows zipped: ``columns()[k]`` is
        :meth:`column` ``k``), a new list of the kept tuples (read them, never change them).

        The columns are read from the rows once, in one C-level sweep, and kept for the rows
        list they were read from at that list's length: the library only appends rows
        (:meth:`add_row`, :meth:`add_rows`) or makes a new table (:meth:`subset`), and a new
        length or a new list drops what was kept. A row is not rewritten in place once the
        columns were read."""
        rows = self.rows
        if self._columns_of[0] is not rows or self._columns_of[1] != len(rows):
            self._columns = list(zip(*rows))
            self._columns_of = (rows, len(rows))
        return list(self._columns)

    def ids(self) -> Iterator[str]:
        """Every node of every row, row by row."""
        return chain.from_iterable(self.rows)

    def node_map(self) -> dict[str, str]:
        """Every node of every row -> the template node in the same position."""
        n = len(self.rows)
        return dict(zip(self.ids(), self.template * n))

    def subset(self, keep: list[bool]) -> InstanceTable:
        """The table of the rows where ``keep`` is true (same template, same order)."""
        recorded = len(self.prefixes) == len(self.rows)
        return InstanceTable(self.template, list(compress(self.rows, keep)), self.base,
                             list(compress(self.prefixes, keep)) if recorded else [],
                             list(compress(self.starts, keep)) if recorded else [],
                             self.layouts, self.layouts_hold)


_kind, _op, _inputs = attrgetter("kind"), attrgetter("op"), attrgetter("inputs")
_input = attrgetter("input")


def aligned_rows(nodes: dict[str, Node], table: InstanceTable) -> list[bool]:
    """Per row of ``table``: whether its nodes have the template's kinds and ops position by
    position and read the row's own nodes (or the same shared node) at the template's input
    positions. Checked column by column: each fact of a column is one C-level sweep compared
    with what the template's node gives, and only a column that differs somewhere is
    compared row by row."""
    template, rows = table.template, table.rows
    n = len(rows)
    where = {t: i for i, t in enumerate(template)}
    columns = table.columns()
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


@dataclass(frozen=True, slots=True)
class PathSlot:
    """A template position a row names by its module path + ``suffix``. For a derived
    tensor, its value: the row's node at template position ``value_at``, or the one shared
    node ``value_id`` (neither: not a derived tensor, or one with no value)."""

    suffix: str
    value_at: int | None = None
    value_id: str | None = None


@dataclass(frozen=True, slots=True)
class OpSlot:
    """A template position that is an op: the row's op ``name`` numbered ``rank`` after its
    replay's start."""

    rank: int
    name: str


#: how a row's id at one template position (and a derived tensor's value) follows from the
#: row's record
Recipe = PathSlot | OpSlot


def row_recipe(table: InstanceTable, derived: Mapping[str, Any]) -> list[Recipe] | None:
    """Per template position, how a row's id there (and a derived tensor's value) follows
    from the row's record (None when the table has no record, or a template node is neither
    under its module nor an op). ``derived``: the graph's derived tensors.

    The replay of a closed row makes each of its op positions, in position order, as a new
    node numbered one more than the one before (a CSE hit on an op made before it opens the
    row), names each path position by the row's module path + the template's relative path,
    and gives each derived tensor the row's node at its template's value's position."""
    if not table.base or len(table.prefixes) != len(table.rows):
        return None
    base, recipe, rank = table.base + ".", [], 0
    where = {node_id: i for i, node_id in enumerate(table.template)}
    for node_id in table.template:
        if node_id.startswith("%"):
            rank += 1
            recipe.append(OpSlot(rank, node_id[node_id.index(":") + 1:]))
            continue
        if node_id == table.base:
            suffix = ""
        elif node_id.startswith(base):
            suffix = node_id[len(base) - 1:]
        else:
            return None
        node = derived.get(node_id)
        value = None if node is None else node.input
        recipe.append(PathSlot(suffix) if value is None else
                      PathSlot(suffix, value_at=where[value]) if value in where else
                      PathSlot(suffix, value_id=value))
    return recipe


def _wanted(how: Recipe, table: InstanceTable, columns: list[tuple[str, ...]],
            ) -> tuple[list[str], list[str] | None]:
    """Per row of ``table``: the id its record gives at ``how``'s position, and the value
    it gives the derived tensor there (None: no value to check). ``columns``: the rows'
    columns."""
    n = len(table.rows)
    if isinstance(how, OpSlot):
        rank, name = how.rank, how.name  # read once, not per row
        return [f"%{start + rank}:{name}" for start in table.starts], None
    ids = list(map(add, table.prefixes, repeat(how.suffix, n)))
    if how.value_at is not None:
        return ids, list(columns[how.value_at])
    return ids, None if how.value_id is None else [how.value_id] * n


def run_column(run_nodes: Mapping[int, tuple[Any, ...]] | None, table: InstanceTable,
               k: int) -> Any:
    """Each row's derived tensor at template position ``k`` of ``table`` as the stamper's
    run made them, by column (``run_nodes``: :attr:`Stamper.run_nodes
    <derivgraph.compiler.stamp.Stamper.run_nodes>`): where it holds ``table`` with its rows
    list at its length (every row the run's, none added or replaced since) and position
    ``k``, that column (the nodes the graph holds at the rows' ids there, or their held
    column, :class:`~derivgraph.compiler.graph.HeldDerived`; not to be written); None else
    (each id is looked up)."""
    held = None if run_nodes is None else run_nodes.get(id(table))
    if held is not None and held[0] is table and held[1] is table.rows \
            and held[2] == len(table.rows) and k < len(held[3]):
        return held[3][k]  # type: ignore[no-any-return]
    return None


def _values(column: tuple[str, ...], derived: Mapping[str, Any],
            held: Any = None) -> list[Any]:
    """The value (``input``) of each derived tensor of ``column`` (None where it is none);
    ``held``: those derived tensors, where the caller has them (:func:`run_column`: their
    nodes, or their held column, :class:`~derivgraph.compiler.graph.HeldDerived`, which
    gives them without making the nodes)."""
    if held is not None:
        return list(map(_input, held)) if type(held) is list else held.input_values()
    found = list(map(derived.get, column))  # one identity test each: no node's ``__eq__``
    return list(map(_input, found)) if all(map(is_not, found, repeat(None))) else \
        [None if d is None else d.input for d in found]


def consistent_rows(table: InstanceTable, recipe: list[Recipe], derived: Mapping[str, Any],
                    run_nodes: Mapping[int, tuple[Any, ...]] | None = None) -> list[bool]:
    """Per row of ``table``: whether its ids are the ones its record gives and its derived
    tensors' values the row's nodes its template's read (``recipe``: :func:`row_recipe`;
    ``derived``: the graph's derived tensors): the row is what its replay made, so its
    subgraph is the template's renamed. One C-level comparison per column; row by row only
    for a column that differs. ``run_nodes``: the stamper's run tables, whose derived
    tensors are read by column instead of by id (:func:`run_column`)."""
    columns = table.columns()
    ok = [True] * len(table.rows)
    for k, (column, how) in enumerate(zip(columns, recipe)):
        ids, values = _wanted(how, table, columns)
        if list(column) != ids:
            ok = [a and got == w for a, got, w in zip(ok, column, ids)]
        if values is not None:
            found = _values(column, derived, run_column(run_nodes, table, k))
            if found != values:
                ok = [a and got == w for a, got, w in zip(ok, found, values)]
    return ok


def row_mismatch(table: InstanceTable, recipe: list[Recipe], derived: Mapping[str, Any],
                 i: int) -> tuple[str, str]:
    """What row ``i`` of ``table`` records that its record does not give, and the row's node
    there, at the first position that differs (:func:`consistent_rows`'s rule for one row:
    the error a stamper bug gets)."""
    columns = table.columns()
    row = table.rows[i]
    for k, how in enumerate(recipe):
        ids, values = _wanted(how, table, columns)
        if row[k] != ids[i]:
            return (f"records {row[k]} at the position of its template's "
                    f"{table.template[k]}", row[k])
        if values is not None:
            value = _values((row[k],), derived)[0]
            if value != values[i]:
                return f"gives {row[k]} the value {value}, its template's reads {values[i]}", \
                    row[k]
    return "is not its record", row[0]
