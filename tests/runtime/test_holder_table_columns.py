"""entry74: the holder table takes its column rows' ids and storages from their entry columns.

:func:`~derivgraph.runtime.entry_columns.held_columns` names each held column's
:class:`~derivgraph.runtime.entry_columns.EntryColumn`; :func:`~derivgraph.runtime.accessors.
column_spans` keeps those whose rows are the column's very entries and that hold an id and a
storage per row, and :class:`~derivgraph.runtime.accessors.HolderTable` takes their ids and
storages at the rows' slice (:func:`~derivgraph.runtime.accessors.column_read`) instead of
reading each row's entry. Each answer is checked against the reading it replaces.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph import planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns, holders
from derivgraph.runtime.accessors import HolderTable, column_read, column_spans
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _compiled(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, Any]]:
    """A stamped 6-layer plan, with what ``held_columns`` gave and ``column_spans`` answered."""
    kept: dict[str, Any] = {"spans": []}
    real_held, real_spans = entry_columns.held_columns, holders.column_spans

    def keep_held(columns: Any, others: Any, owners: PathReader) -> Any:
        kept["columns"] = columns
        kept["held"] = real_held(columns, others, owners)
        return kept["held"]

    def keep_spans(columns: Any, found: Any, entries: Any) -> Any:
        kept["spans"].append(real_spans(columns, found, entries))
        return kept["spans"][-1]

    monkeypatch.setattr(planner, "held_columns", keep_held)
    monkeypatch.setattr(holders, "column_spans", keep_spans)
    with stamping(True):
        plan = planner.compile_plan(scaling_model(6), [scaling_spec()])
    return plan, kept


_ID, _STORAGE, _PTR = (lambda e: e.id), (lambda e: e.storage), (lambda e: e.startup_ptr)


def test_the_compile_table_takes_every_column_and_equals_the_entries_reading(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    table = plan.holders.table
    spans = kept["spans"][0]
    # every held column names its entry column, and each was taken at its rows
    assert [c[3] for c in kept["held"]] == list(kept["columns"])
    assert [column for _rows, column in spans] == list(kept["columns"])
    assert sum(len(column.ids) for _rows, column in spans) == 20  # 4 columns x 5 rows (+ template)
    for rows, column in spans:
        assert table.entries[rows] == column.entries  # the rows' slice: their very entries
    # field by field, the table is what reading every entry gives
    assert table.id_list == list(map(_ID, table.entries))
    assert len(table.storages) == len(table.entries)
    assert all(s is e.storage for s, e in zip(table.storages, table.entries))
    assert table.ptrs == list(map(_PTR, table.entries))
    # and a table built without the spans is the same one
    plain = HolderTable(table.entries, plan.holders._where,
                        (table.dicts, table.keys, table.fast))
    assert plain.id_list == table.id_list
    assert all(map(lambda a, b: a is b, plain.storages, table.storages))


def test_column_read_takes_the_spans_values_and_reads_only_the_rest() -> None:
    entries = [SimpleNamespace(v=i) for i in range(7)]
    read: list[int] = []

    def get(e: Any) -> Any:
        read.append(e.v)
        return e.v

    got = column_read(entries, get, [(slice(1, 6, 2), ["a", "b", "c"]), (slice(2, 3), ["d"])])
    assert got == [0, "a", "d", "b", 4, "c", 6]
    assert read == [0, 4, 6]  # the spans' rows are not read
    read.clear()
    assert column_read(entries, get, []) == list(range(7)) and read == list(range(7))


def _held(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list[Any]]:
    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    found = [rows for rows, _column in kept["spans"][0]]  # every column's, in held's order
    return entries, found, kept["held"]


def test_canary_a_column_not_of_its_rows_or_unallocated_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a held column whose named column holds other entries (a copy of the list), or
    no storage per row (not allocated), or that names none, or whose rows were not found, is
    left out (its rows read from their entries)."""
    entries, found, held = _held(monkeypatch)
    assert len(column_spans(held, found, entries)) == len(held)  # the compile's: all taken
    name, rows, owners, column = held[0]
    copied = SimpleNamespace(ids=column.ids, entries=list(rows), storages=column.storages)
    unallocated = SimpleNamespace(ids=column.ids, entries=rows, storages=[])
    short = SimpleNamespace(ids=column.ids[:-1], entries=rows, storages=column.storages)
    for planted in (copied, unallocated, short):
        assert column_spans([(name, rows, owners, planted)], found[:1], entries) == []
    assert column_spans([(name, rows, owners)], found[:1], entries) == []
    assert column_spans([held[0]], [None], entries) == []


def test_columns_keep_the_startup_addresses_they_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    for column in kept["columns"]:  # attribute and alias columns: the entries' own, row by row
        assert column.ptrs == [e.startup_ptr for e in column.entries]
        assert column.ptrs == [s.data_ptr() for s in column.storages]
    spans = kept["spans"][0]
    table = plan.holders.table
    assert table.ptrs == [e.startup_ptr for e in table.entries]
    # the table takes a column's addresses at its rows (planted ones show it took them) ...
    rows, column = spans[0]
    planted = SimpleNamespace(ids=column.ids, entries=column.entries, storages=column.storages,
                              ptrs=list(range(len(column.ids))))
    located = (table.dicts, table.keys, table.fast)
    taken = HolderTable(table.entries, plan.holders._where, located, [(rows, planted)])
    assert taken.ptrs[rows] == planted.ptrs


def test_canary_a_column_without_its_addresses_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a column that recorded no startup addresses (None), or not one per row, has
    its rows' addresses read from their entries."""
    plan, kept = _compiled(monkeypatch)
    table = plan.holders.table
    rows, column = kept["spans"][0][0]
    located = (table.dicts, table.keys, table.fast)
    for ptrs in (None, list(range(len(column.ids) - 1))):
        planted = SimpleNamespace(ids=column.ids, entries=column.entries,
                                  storages=column.storages, ptrs=ptrs)
        got = HolderTable(table.entries, plan.holders._where, located, [(rows, planted)])
        assert got.ptrs == [e.startup_ptr for e in table.entries]


def _walked(monkeypatch: pytest.MonkeyPatch, paths: Any = "keep") -> dict[str, Any]:
    """A stamped 6-layer compile with what the holders' walk was given as the entries' owner
    paths, and the row count of each ``column_read`` of owner paths taken from columns;
    ``paths``: where not "keep", each held column's paths replaced by ``paths(column)``."""
    got: dict[str, Any] = {"taken": []}
    real_walk, real_read, real_held = holders.Holders.walk, holders.column_read, \
        entry_columns.held_columns

    def walk(self: Any, owner_paths: Any, entry_paths: Any = ()) -> Any:
        got["entry_paths"], got["entries"] = list(entry_paths), list(self.entries.values())
        return real_walk(self, owner_paths, entry_paths)

    def read(entries: Any, reader: Any, spans: Any) -> Any:
        got["taken"].append(sum(len(values) for _rows, values in spans))
        return real_read(entries, reader, spans)

    def held(columns: Any, others: Any, owners: PathReader) -> Any:
        if paths != "keep":
            for column in columns:
                column.paths = paths(column)
        return real_held(columns, others, owners)

    monkeypatch.setattr(holders.Holders, "walk", walk)
    monkeypatch.setattr(holders, "column_read", read)
    monkeypatch.setattr(planner, "held_columns", held)
    with stamping(True):
        got["plan"] = planner.compile_plan(scaling_model(6), [scaling_spec()])
    return got


def test_the_walk_takes_the_columns_owner_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    got = _walked(monkeypatch)
    assert got["taken"] == [20]  # every column row's path taken from its column
    assert got["entry_paths"] == [e.owner_path for e in got["entries"]]


def test_canary_a_column_without_its_paths_has_them_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a column whose owner paths are unknown (None) or not one per row has its rows'
    paths read from their entries (the walk gets the same paths)."""
    for paths in ((lambda column: None), (lambda column: list(column.paths)[:-1])):
        got = _walked(monkeypatch, paths)
        assert got["taken"] == [0]
        assert got["entry_paths"] == [e.owner_path for e in got["entries"]]
