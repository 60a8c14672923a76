""":func:`~derivgraph.runtime.entry.keeps_startup` answers an entry column's rows from what
the column's own startup record wrote to them (``kept``: every row's startup data set, or
none), at the rows' positions the plan's :class:`~derivgraph.runtime.entry.EntryTable` found
(:attr:`~derivgraph.runtime.entry.EntryTable.rows`), without reading the rows; every other
entry is read. The answer is the per-row rule's, entry for entry, and the startup address
check made with it is the check made without it. Canaries: a column's planted ``kept`` is
what answers its rows (so a wrong record would show), an unrecorded column is read row by
row, and rows not found among the ids are left out."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.runtime import entry as entry_module
from derivgraph.runtime import storage as storage_module
from derivgraph.runtime.accessors import not_taken
from derivgraph.runtime.entry import EntryTable, keeps_startup
from derivgraph.runtime.entry_columns import AliasColumn, EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan(layers: int = 6) -> Any:
    return compile_plan(scaling_model(layers), [scaling_spec()])


def _per_row(entries: list[Any]) -> list[bool]:
    return [e.startup_data is not None for e in entries]


def test_the_table_finds_every_column_at_its_rows_and_each_recorded_what_it_wrote():
    plan = _plan()
    table = plan.entries
    entries = list(table.by_id.values())
    assert len(table.rows) == len(table.columns) == 4
    for span, column in table.rows:
        assert entries[span] == column.entries and all(map(
            lambda a, b: a is b, entries[span], column.entries))
        assert list(table.by_id)[span] == column.ids
    kept = {type(c): c.kept for _, c in table.rows}
    assert kept == {EntryColumn: True, AliasColumn: False}
    for _, column in table.rows:
        assert {e.startup_data is not None for e in column.entries} == {column.kept}


def test_keeps_startup_by_columns_is_the_per_row_rule_and_reads_no_column_row(monkeypatch):
    plan = _plan()
    table = plan.entries
    entries = list(table.by_id.values())
    rows = {id(e) for _, c in table.rows for e in c.entries}
    read: list[Any] = []
    real = entry_module._STARTUP_DATA
    monkeypatch.setattr(entry_module, "_STARTUP_DATA", lambda e: read.append(e) or real(e))
    answer = keeps_startup(entries, table.rows)
    assert answer == _per_row(entries)
    assert True in answer and False in answer
    assert read and not any(id(e) in rows for e in read)  # the generic entries only
    assert len(read) == len(entries) - len(rows) == len(table.generic)
    read.clear()
    plan.tensors._startup = None
    check = plan.tensors.startup_addresses()  # the plan's own check takes the rows
    assert len(read) == len(table.generic)
    assert len(check.tensors) == sum(answer)


def test_the_startup_check_made_with_the_rows_is_the_one_made_without():
    plan = _plan()
    tensors = plan.tensors
    entries = list(plan.entries.by_id.values())
    with_rows = tensors.startup_addresses()
    assert tensors._startup_mask == bytes(_per_row(entries))
    tensors._startup = None
    tensors._table = None  # no rows: every entry read
    without = tensors.startup_addresses()
    assert len(with_rows.tensors) == len(without.tensors) == sum(_per_row(entries))
    assert all(map(lambda a, b: a is b, with_rows.tensors, without.tensors))
    assert with_rows.ptrs == without.ptrs


@pytest.mark.parametrize("planted", [True, False])
def test_canary_a_columns_record_answers_its_rows(planted):
    plan = _plan()
    table = plan.entries
    entries = list(table.by_id.values())
    span, column = next((s, c) for s, c in table.rows if c.kept is not planted)
    column.kept = planted  # a record that says otherwise than its rows: it is what answers
    answer = keeps_startup(entries, table.rows)
    assert answer[span] == [planted] * len(column)
    assert answer != _per_row(entries)
    assert storage_module._restorable(entries, table.rows) == bytes(answer)


def test_canary_an_unrecorded_column_is_read_row_by_row():
    plan = _plan()
    table = plan.entries
    entries = list(table.by_id.values())
    span, column = table.rows[0]
    column.kept = None
    column.entries[1].startup_data = None  # its row's own answer now
    answer = keeps_startup(entries, table.rows)
    assert answer == _per_row(entries) and answer[span][1] is False


def test_canary_rows_are_found_only_where_the_ids_are_the_columns():
    plan = _plan()
    table = plan.entries
    columns, generic = table.columns, dict(table.generic)
    ids = list(table.by_id)
    fresh = EntryTable()
    fresh.by_id.update(table.by_id)
    fresh.set_columns(columns, generic, ids)
    assert [c for _, c in fresh.rows] == list(columns)
    moved = ids[1:] + ids[:1]  # every column's ids one place off
    fresh.set_columns(columns, generic, moved)
    assert [s for s, _ in fresh.rows] == [slice(s.start - 1, s.stop - 1, s.step)
                                          for s, _ in table.rows]
    swapped = list(ids)
    first = table.rows[0][0]
    a, b = first.start + 2 * first.step, first.start + 3 * first.step
    swapped[a], swapped[b] = swapped[b], swapped[a]  # the first column's rows 2, 3 swapped
    fresh.set_columns(columns, generic, swapped)
    assert [c for _, c in fresh.rows] == list(columns[1:])
    fresh.set_columns(columns, generic, ids[:-1])  # not the table's keys: none found
    assert fresh.rows == ()
    fresh.set_columns(columns, generic)
    assert fresh.rows == ()
    fresh.set_columns(columns, generic, ids)
    fresh.open_columns()
    assert fresh.rows == () and fresh.columns == ()


def test_a_relayout_opens_the_columns_and_the_check_reads_every_row():
    plan = _plan()
    table = plan.entries
    assert table.rows
    table.open_columns()
    entries = list(table.by_id.values())
    plan.tensors._startup = None
    check = plan.tensors.startup_addresses()
    assert plan.tensors._startup_mask == bytes(_per_row(entries))
    assert len(check.tensors) == sum(_per_row(entries))
    assert all(isinstance(t, torch.Tensor) for t in check.tensors)


@pytest.mark.parametrize("marks", [
    b"", b"\x01", b"\x00", b"\x01" * 200 + b"\x00" + b"\x01" * 99, b"\x00\x01" * 50, b"\x00" * 300,
    b"\x01\x00\x00" + b"\x01" * 500])
def test_the_rows_left_to_read_are_every_zero_few_or_many(marks):
    found = not_taken(bytearray(marks))  # None: no 1, every position (as keeps_startup reads it)
    found = list(range(len(marks))) if found is None else found
    assert found == [i for i, m in enumerate(marks) if m == 0]
