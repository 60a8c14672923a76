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

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, attrgetter, is_not, itemgetter
from typing import Any

from derivgraph.compiler.ir import Node

__all__ = ["InstanceTable", "OpSlot", "PathSlot", "Recipe", "RowIds", "aligned_rows",
           "consistent_rows", "row_mismatch", "row_recipe", "run_column"]


class InstanceTable:
    """A template's own nodes and, row by row, every layer stamped from it (the same
    positions); column ``k`` is template node ``k``'s counterpart in every row.

    The rows are held as columns (:attr:`cols`: one list per template position, the rows'
    ids there in stamping order): no record is kept per row. :attr:`rows` reads them as a
    sequence of tuples (each row's tuple made when it is read); the library's sweeps take
    the columns (:meth:`columns`, :meth:`column`, :meth:`ids`, :meth:`ids_at`)."""

    __slots__ = ("_n", "_rows", "base", "cols", "layouts", "layouts_hold", "prefixes",
                 "starts", "template")

    def __init__(self, template: tuple[str, ...], rows: Iterable[tuple[str, ...]] = (),
                 base: str = "", prefixes: list[str] | None = None,
                 starts: list[int] | None = None,
                 layouts: dict[int, tuple[Any, ...]] | None = None,
                 layouts_hold: bool = True) -> None:
        self.template = template
        # the record of each row's replay (empty when the table was not stamped): the
        # template's module path, and per row its module path and the op count before its
        # replay
        self.base = base
        self.prefixes: list[str] = [] if prefixes is None else prefixes
        self.starts: list[int] = [] if starts is None else starts
        # template position -> the (shape, stride, dtype, device) every row's replay gives
        # its source there: the template's probes proved it (each row's probes gave the
        # same facts)
        self.layouts: dict[int, tuple[Any, ...]] = {} if layouts is None else layouts
        self.layouts_hold = layouts_hold  # false when a row's replay read such a source
        self._set_rows(rows)

    def _set_rows(self, rows: Iterable[tuple[str, ...]]) -> None:
        rows = list(rows)
        width = len(rows[0]) if rows else len(self.template)
        self.cols: list[list[str]] = [list(map(itemgetter(k), rows)) for k in range(width)]
        self._n = len(rows)
        self._rows = _Rows(self)

    @property
    def rows(self) -> _Rows:
        """Every row (its ids, template position by position), read from the columns; the
        same object until the rows are set anew (an append is read: its length grows)."""
        return self._rows

    @rows.setter
    def rows(self, rows: Iterable[tuple[str, ...]]) -> None:
        self._set_rows(rows)

    def __repr__(self) -> str:
        return (f"InstanceTable(template={self.template!r}, rows={list(self.rows)!r}, "
                f"base={self.base!r}, prefixes={self.prefixes!r}, starts={self.starts!r}, "
                f"layouts={self.layouts!r}, layouts_hold={self.layouts_hold!r})")

    def add_row(self, row: tuple[str, ...], prefix: str, start: int) -> None:
        """Append a stamped layer's row with its record (module path, op count before)."""
        self._extend([row])
        self.prefixes.append(prefix)
        self.starts.append(start)

    def add_rows(self, rows: list[tuple[str, ...]], prefixes: list[str],
                 starts: list[int]) -> None:
        """:meth:`add_row` of each row, in order."""
        self._extend(rows)
        self.prefixes += prefixes
        self.starts += starts

    def add_columns(self, columns: list[list[str]], prefixes: list[str],
                    starts: list[int]) -> None:
        """:meth:`add_rows` of the rows whose position ``k`` is ``columns[k]`` (every row's
        id there, in order; one per template position), without making the rows."""
        if len(columns) != len(self.cols) or len({len(c) for c in columns}) > 1:
            raise ValueError("one column per template position, each of one length")
        if columns:
            deque(map(list.extend, self.cols, columns), maxlen=0)
            self._n += len(columns[0])
        else:
            self._n += len(prefixes)
        self.prefixes += prefixes
        self.starts += starts

    def _extend(self, rows: list[tuple[str, ...]]) -> None:
        if not rows:
            return
        width = len(rows[0])
        if width != len(self.cols) or any(len(row) != width for row in rows):
            if self._n:
                raise ValueError("a row of another width than the table's")
            self.cols = [[] for _ in range(width)]  # the first rows give the width
        deque(map(list.extend, self.cols, zip(*rows)), maxlen=0)
        self._n += len(rows)

    def __len__(self) -> int:
        return self._n

    def column(self, k: int) -> list[str]:
        """Template node ``k``'s counterpart in every row, in stamping order: the held
        column itself, no copy (read it, never change it; copy it to keep it past a later
        add to the table); empty where the table has no row."""
        return self.cols[k] if self._n else []

    def columns(self) -> list[list[str]]:
        """Every template position's column (``columns()[k]`` is :meth:`column` ``k``): a
        new list of the held columns (read them, never change them); empty where the table
        has no row."""
        return list(self.cols) if self._n else []

    def ids(self) -> list[str]:
        """Every node of every row, row by row."""
        return self.ids_at(0, len(self.cols))

    def ids_at(self, start: int, stop: int) -> list[str]:
        """Every row's nodes at template positions ``start`` .. ``stop - 1``, row by row (the
        columns interleaved by C-level slice writes: no row made)."""
        cols = self.cols[start:stop]
        if not self._n or not cols:
            return []
        if len(cols) == 1:
            return list(cols[0])
        width = len(cols)
        out: list[str] = [""] * (self._n * width)
        for k, column in enumerate(cols):
            out[k::width] = column
        return out

    def node_map(self) -> dict[str, str]:
        """Every node of every row -> the template node in the same position."""
        return dict(zip(self.ids(), self.template * self._n))

    def subset(self, keep: list[bool]) -> InstanceTable:
        """The table of the rows where ``keep`` is true (same template, same order)."""
        recorded = len(self.prefixes) == self._n
        table = InstanceTable(self.template, (), self.base,
                              list(compress(self.prefixes, keep)) if recorded else [],
                              list(compress(self.starts, keep)) if recorded else [],
                              self.layouts, self.layouts_hold)
        table.cols = [list(compress(column, keep)) for column in self.cols]
        table._n = sum(keep[:self._n])  # the rows compress keeps
        table._rows = _Rows(table)
        return table


class _Rows(Sequence[tuple[str, ...]]):
    """An :class:`InstanceTable`'s rows read from its columns (a row's tuple made when it
    is read)."""

    __slots__ = ("_table",)

    def __init__(self, table: InstanceTable) -> None:
        self._table = table

    def __len__(self) -> int:
        return self._table._n

    def __getitem__(self, at: Any) -> Any:
        table = self._table
        if type(at) is slice:
            return list(zip(*[column[at] for column in table.cols])) if table.cols else \
                [()] * len(range(table._n)[at])
        if not table.cols:
            range(table._n)[at]  # noqa: B018 (its IndexError)
            return ()
        return tuple([column[at] for column in table.cols])

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        table = self._table
        return zip(*table.cols) if table.cols else iter([()] * table._n)

    def __setitem__(self, at: int, row: tuple[str, ...]) -> None:
        """Rewrite row ``at`` (each column at that row)."""
        table = self._table
        if len(row) != len(table.cols):
            raise ValueError("a row of another width than the table's")
        range(table._n)[at]  # noqa: B018 (its IndexError)
        for column, node_id in zip(table.cols, row):
            column[at] = node_id

    def append(self, row: tuple[str, ...]) -> None:
        """Add a row (no record: :meth:`InstanceTable.add_row` adds one)."""
        self._table._extend([row])

    def pop(self) -> tuple[str, ...]:
        """Take the last row out."""
        table = self._table
        row = self[-1]
        for column in table.cols:
            column.pop()
        table._n -= 1
        return row  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class RowIds:
    """The one rule of a stamped row's ids, by column: a path position's id is the row's
    module path + the position's suffix (:meth:`paths`), an op position's ``%{n}:{name}``
    with ``n`` the op count before the row's replay + the op's rank (:meth:`ops`).

    The builders of a graph's stamped columns (the derived tensors' ids,
    :func:`~derivgraph.compiler.build.build_graph`; a column run's sources and ops,
    :meth:`Replay.run_rows <derivgraph.compiler.replay.Replay.run_rows>`) make their ids
    here, each column kept with what it was made of (immutable: its paths and ids as
    tuples, or its op numbers' range and ids). :func:`consistent_rows` asks the rule for
    the ids a table's record gives: where a kept column was made of those very paths (a
    stretch of them: the rows after a template's own) or op numbers, the kept ids are the
    answer (each its path + suffix, or its number and name, by construction), read without
    making a string; else they are made as the rule makes them."""

    __slots__ = ("_ops", "_paths")

    def __init__(self) -> None:
        # suffix -> each kept column of it: (its paths, its ids)
        self._paths: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
        # op name -> each kept column of it: (its op numbers, its ids)
        self._ops: dict[str, list[tuple[range, tuple[str, ...]]]] = {}

    def paths(self, paths: list[str], suffix: str) -> list[str]:
        """Each of ``paths`` + ``suffix`` (a new list)."""
        for kept_paths, ids in self._paths.get(suffix, ()):
            at = _stretch(kept_paths, paths)
            if at is not None:
                return list(ids[at:at + len(paths)])
        return list(map(add, paths, repeat(suffix)))

    def keep_paths(self, paths: list[str], suffixes: list[str]) -> list[list[str]]:
        """Per suffix of ``suffixes``, each of ``paths`` + it (new lists), made here and
        kept as columns of the graph (one copy of ``paths`` for them all)."""
        held = tuple(paths)
        made = [list(map(add, paths, repeat(suffix))) for suffix in suffixes]
        for suffix, ids in zip(suffixes, made, strict=True):
            self._paths.setdefault(suffix, []).append((held, tuple(ids)))
        return made

    def release(self) -> None:
        """Drop the kept columns (the rule stands: every later answer made by it)."""
        self._paths, self._ops = {}, {}

    def ops(self, numbers: range | list[int], name: str, keep: bool = False) -> list[str]:
        """``%{n}:{name}`` for each op number ``n`` of ``numbers`` (a new list); ``keep``:
        made here and kept as a column of the graph (``numbers`` a range)."""
        if not keep and numbers:
            first, size = numbers[0], len(numbers)
            for kept, ids in self._ops.get(name, ()):
                if first in kept:
                    at = kept.index(first)
                    if list(kept[at:at + size]) == list(numbers):
                        return list(ids[at:at + size])
        made = [f"%{n}:{name}" for n in numbers]
        if keep and type(numbers) is range:
            self._ops.setdefault(name, []).append((numbers, tuple(made)))
        return made


def _stretch(kept: tuple[str, ...], paths: list[str]) -> int | None:
    """Where ``paths`` are a stretch of ``kept``: at its start, or ending at its end (a
    table's rows after its template's own); None else."""
    n = len(paths)
    if not n or n > len(kept):
        return None
    for at in (0, len(kept) - n):
        if kept[at] == paths[0] and kept[at:at + n] == tuple(paths):
            return at
    return None


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
            row_ids: RowIds | None = None) -> tuple[list[str], list[str] | None]:
    """Per row of ``table``: the id its record gives at ``how``'s position, and the value
    it gives the derived tensor there (None: no value to check). ``columns``: the rows'
    columns; ``row_ids``: the graph's rule of row ids (:class:`RowIds`), with its kept
    columns."""
    n = len(table.rows)
    rule = _RULE if row_ids is None else row_ids
    if isinstance(how, OpSlot):
        return rule.ops(list(map(add, table.starts, repeat(how.rank))), how.name), None
    ids = rule.paths(table.prefixes, how.suffix)
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
                    run_nodes: Mapping[int, tuple[Any, ...]] | None = None,
                    row_ids: RowIds | None = None) -> list[bool]:
    """Per row of ``table``: whether its ids are the ones its record gives and its derived
    tensors' values the row's nodes its template's read (``recipe``: :func:`row_recipe`;
    ``derived``: the graph's derived tensors): the row is what its replay made, so its
    subgraph is the template's renamed. One C-level comparison per column; row by row only
    for a column that differs. ``run_nodes``: the stamper's run tables, whose derived
    tensors are read by column instead of by id (:func:`run_column`); ``row_ids``: the
    graph's rule of row ids with its kept columns (:class:`RowIds`: a column kept from the
    very paths or op numbers of the record is read, not made again)."""
    columns = table.columns()
    ok = [True] * len(table.rows)
    for k, (column, how) in enumerate(zip(columns, recipe)):
        ids, values = _wanted(how, table, columns, row_ids)
        if list(column) != ids:
            ok = [a and got == w for a, got, w in zip(ok, column, ids)]
        if values is not None:
            found = _values(column, derived, run_column(run_nodes, table, k))
            if found != values:
                ok = [a and got == w for a, got, w in zip(ok, found, values)]
    return ok


_RULE = RowIds()  # the rule with no kept column (nothing is kept in it)


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
