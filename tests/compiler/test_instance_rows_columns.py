"""An :class:`~derivgraph.compiler.instances.InstanceTable` holds its rows as columns (one list
per template position): every way of adding rows (a row, rows, a run's columns) gives the same
table, :attr:`rows` reads each row as the tuple the rows list held, the row-by-row id sweeps
(:meth:`ids`, :meth:`ids_at`) are the rows chained, and a stamped build keeps no tuple per
row. Canaries (bound79 NOTES): ``add_columns`` extending the columns in another order, and
``ids_at`` interleaving them in another order, each turn a test here red."""

from __future__ import annotations

import gc
from itertools import chain

import pytest

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.instances import InstanceTable
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_TEMPLATE = ("l.0.a", "l.0.b", "%0:mul")


def _rows(n: int, at: int = 0) -> list[tuple[str, ...]]:
    return [(f"l.{i}.a", f"l.{i}.b", f"%{i}:mul") for i in range(at, at + n)]


def _same(table: InstanceTable, rows: list[tuple[str, ...]]) -> None:
    """``table``'s rows are ``rows`` by every read."""
    assert len(table) == len(table.rows) == len(rows)
    assert list(table.rows) == rows and table.rows == rows
    assert [table.rows[i] for i in range(len(rows))] == rows
    if rows:
        assert table.rows[-1] == rows[-1] and table.rows[1:] == rows[1:]
    assert table.cols == ([list(c) for c in zip(*rows)] if rows else [[], [], []])
    assert table.ids() == list(chain.from_iterable(rows))
    for start in range(4):
        for stop in range(start, 4):
            assert table.ids_at(start, stop) == \
                list(chain.from_iterable(row[start:stop] for row in rows))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_each_way_of_adding_rows_gives_the_same_table(n: int) -> None:
    rows = _rows(n, 1)
    prefixes, starts = [f"l.{i}" for i in range(1, n + 1)], list(range(n))
    one = InstanceTable(_TEMPLATE, base="l.0")
    for row, prefix, start in zip(rows, prefixes, starts):
        one.add_row(row, prefix, start)
    many = InstanceTable(_TEMPLATE, base="l.0")
    many.add_rows(rows, prefixes, starts)
    columns = InstanceTable(_TEMPLATE, base="l.0")
    columns.add_columns([[r[k] for r in rows] for k in range(3)], prefixes, starts)
    made = InstanceTable(_TEMPLATE, rows, "l.0", list(prefixes), list(starts))
    for table in (one, many, columns, made):
        _same(table, rows)
        assert (table.prefixes, table.starts) == (prefixes, starts)


def test_a_table_of_no_position_counts_its_rows() -> None:
    table = InstanceTable((), base="l.0")
    table.add_columns([], ["l.1", "l.2"], [3, 3])
    assert len(table) == 2 and list(table.rows) == [(), ()] and table.rows[1] == ()
    assert table.ids() == [] and table.subset([False, True]).rows == [()]


def test_subset_setting_and_writing_rows() -> None:
    rows = _rows(5)
    table = InstanceTable(_TEMPLATE, rows, "l.0", [f"l.{i}" for i in range(5)], list(range(5)))
    kept = table.subset([True, False, True, False, True])
    _same(kept, rows[::2])
    assert kept.prefixes == ["l.0", "l.2", "l.4"] and kept.starts == [0, 2, 4]
    _same(table, rows)  # the table itself unchanged
    view = table.rows
    table.rows[1] = ("x", "y", "z")
    rows[1] = ("x", "y", "z")
    _same(table, rows)
    table.rows.append(("p", "q", "r"))
    assert table.rows is view and table.rows[-1] == ("p", "q", "r")
    assert table.rows.pop() == ("p", "q", "r")
    _same(table, rows)
    table.rows = _rows(2, 7)
    assert table.rows is not view
    _same(table, _rows(2, 7))
    with pytest.raises(ValueError):
        table.add_row(("a", "b"), "l.9", 9)
    with pytest.raises(IndexError):
        table.rows[5]  # noqa: B018


def test_a_stamped_build_keeps_no_tuple_per_row() -> None:
    model = scaling_model(40)
    enabled = gc.isenabled()
    gc.disable()
    try:
        graph = build.build_graph(model, match_specs(model, [scaling_spec()]))
        [table] = [t for t in graph.stamps if len(t) > 1]
        width, firsts = len(table.template), set(table.cols[0])
        kept = [o for o in gc.get_objects() if type(o) is tuple and len(o) == width
                and o and type(o[0]) is str and o[0] in firsts]
    finally:
        if enabled:
            gc.enable()
    assert len(table) == 39 and not kept
    assert all(type(column) is list and len(column) == 39 for column in table.cols)
