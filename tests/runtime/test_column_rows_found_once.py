"""A held column's rows are found once per refresh.

:meth:`~derivgraph.runtime.holders.Holders.refresh` finds each held column's rows in the
entries (at the rows the plan's entry table found, ``EntryTable.rows``, else by
:func:`~derivgraph.runtime.accessors.column_rows`); where it leaves no entry out of
the holder table, the table's entries are those entries and
:func:`~derivgraph.runtime.accessors.holders_of` takes the rows found there instead of finding
them again; a column not found there (its rows taken by an earlier one) is looked for again.
Each case is compared with the reading without columns (the reference).
"""

from __future__ import annotations

from typing import Any

import pytest
from torch import nn

from derivgraph import planner
from derivgraph.runtime import accessors, entry_columns, holders
from derivgraph.runtime.accessors import holders_of
from tests.runtime.test_hold47 import _compiled, _ids


def _table(h: Any) -> tuple[list, list, list, list, list]:
    table = h.table
    return ([id(e) for e in table.entries], [id(d) for d in table.dicts], table.keys,
            table.fast, [id(e) for e in h._scalars])


def _count_finds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = accessors.column_rows

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(accessors, "column_rows", spy)
    monkeypatch.setattr(holders, "column_rows", spy)
    return calls


def test_refresh_finds_each_column_once_where_no_entry_is_left_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    h = plan.holders
    h.refresh()
    want = _table(h)
    assert not h._scalars and len(h.table) == len(h.entries)  # nothing left out
    calls = _count_finds(monkeypatch)
    h.refresh(kept["held"])
    assert _table(h) == want
    assert calls == []  # the rows the plan's entry table found: none searched
    h._table = None  # holders without the table: each column searched once, in refresh only
    h.refresh(kept["held"])
    assert _table(h) == want
    assert len(calls) == len(kept["held"]) == 4


def test_refresh_with_scalars_left_out_finds_the_columns_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stamped stack beside toys holding a derived scalar: the table's entries are not the
    entries, so the rows are found again in the table's (positions shifted by the scalars)."""
    from tests.runtime.test_entry_table import _compile

    kept: dict[str, Any] = {}
    real = entry_columns.held_columns

    def keep(*args: Any) -> Any:
        kept["held"] = real(*args)
        return kept["held"]

    monkeypatch.setattr(planner, "held_columns", keep)
    h = _compile().holders
    assert h._scalars and len(kept["held"]) >= 4
    first = list(h.entries.values()).index(h._scalars[0])
    columns = kept["held"]
    assert any(list(h.entries.values()).index(c[1][0]) > first for c in columns)  # shifted
    h.refresh()
    want = _table(h)
    calls = _count_finds(monkeypatch)
    h.refresh(columns)
    assert _table(h) == want
    # in the entries at the rows the plan's entry table found (none searched), then searched
    # in the table's entries
    assert len(calls) == len(columns)
    h._table = None  # holders without the table: searched in both
    h.refresh(columns)
    assert _table(h) == want
    assert len(calls) == 3 * len(columns)


def test_a_column_not_found_in_refresh_is_looked_for_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoy column first (owners not the walk's, over the real column's rows) takes the rows
    in the finding; ``holders_of`` refuses the decoy on its owners, then finds the real column
    (not found before: its rows were taken) and takes it whole: no row read by name."""
    plan, kept = _compiled(monkeypatch)
    h = plan.holders
    entries, objects = h.table.entries, h.hops.objects
    want = _ids(holders_of(objects, plan.model, entries))
    name, rows, owners, *_ = kept["held"][0]
    decoys = [nn.Module() for _ in owners]
    columns = [(name, rows, decoys), (name, rows, owners)]
    taken = bytearray(len(entries))
    found = [accessors.column_rows(entries, rows, decoys, taken), None]  # as refresh finds
    assert found[0] is not None
    read: list[int] = []
    real = accessors.registries_holding

    def spy(found_owners: list[Any], key: str) -> Any:
        read.append(len(found_owners))
        return real(found_owners, key)

    monkeypatch.setattr(accessors, "registries_holding", spy)
    got = _ids(holders_of(objects, plan.model, entries, columns, found))
    assert got == want
    assert sum(read) == len(entries) - len(rows)  # the column's rows taken whole, none read
