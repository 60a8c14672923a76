"""hold52: :func:`~derivgraph.runtime.accessors.holders_of` takes a held column where its rows
lie evenly spaced in the entries (one identity sweep, none taken by another column), filling
its rows by slice; every other row is read by name as before. Each case is compared with the
reading without columns (the reference), on plans and on entry orders where a wrong shortcut
would differ."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.runtime import accessors
from derivgraph.runtime.accessors import holders_of
from tests.runtime.test_hold47 import _compiled, _ids


def _reference(plan: Any, entries: list[Any]) -> tuple[list, list, list]:
    return _ids(holders_of(plan.holders.hops.objects, plan.model, entries))


def test_the_compile_s_columns_are_taken_by_slice_not_read_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    want = _reference(plan, entries)
    read: list[str] = []
    real = accessors.registries_holding

    def spy(owners: list[Any], name: str) -> Any:
        read.append(name)
        return real(owners, name)

    monkeypatch.setattr(accessors, "registries_holding", spy)
    got = _ids(holders_of(plan.holders.hops.objects, plan.model, entries, kept["held"]))
    assert got == want
    assert len(read) == 4  # each name once: the templates' rows; no column's rows are read
    rows = [accessors.column_rows(entries, c[1], c[2], bytearray(len(entries)))
            for c in kept["held"]]
    assert [(r.start, r.step) for r in rows] == [(4, 4), (5, 4), (6, 4), (7, 4)]


def test_canary_a_column_not_evenly_spaced_is_read_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: two rows of different columns swapped in the entries (each column's first two
    rows in place): the sweep over every row finds both columns broken."""
    plan, kept = _compiled(monkeypatch)
    entries = list(plan.holders.table.entries)
    entries[12], entries[13] = entries[13], entries[12]  # layer 3's inv and prod
    want = _reference(plan, entries)
    assert want[1][12:14] == ["prod", "inv"]
    got = _ids(holders_of(plan.holders.hops.objects, plan.model, entries, kept["held"]))
    assert got == want
    for column in kept["held"][:2]:
        assert accessors.column_rows(entries, column[1], column[2],
                                      bytearray(len(entries))) is None


def test_canary_rows_taken_by_a_column_are_not_taken_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a second column over the same rows under another name (owners and all) is
    refused: the first column's answer stands."""
    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    want = _reference(plan, entries)
    name, rows, owners, *_ = kept["held"][0]
    planted = [*kept["held"], ("decoy", rows, owners)]
    got = _ids(holders_of(plan.holders.hops.objects, plan.model, entries, planted))
    assert got == want and "decoy" not in got[1]


@pytest.mark.parametrize("pick", ["one row", "last rows", "every other row", "reversed"])
def test_part_of_a_column_is_taken_or_read_as_before(monkeypatch: pytest.MonkeyPatch,
                                                      pick: str) -> None:
    plan, kept = _compiled(monkeypatch)
    entries = plan.holders.table.entries
    want = _reference(plan, entries)
    name, rows, owners, *_ = kept["held"][1]
    cut = {"one row": slice(2, 3), "last rows": slice(3, None),
           "every other row": slice(0, None, 2), "reversed": slice(None, None, -1)}[pick]
    got = _ids(holders_of(plan.holders.hops.objects, plan.model, entries,
                          [(name, rows[cut], owners[cut])]))
    assert got == want
    found = accessors.column_rows(entries, rows[cut], owners[cut], bytearray(len(entries)))
    assert (found is None) == (pick == "reversed")


def _table(holders: Any) -> tuple[list, list, list, list, list]:
    table = holders.table
    return ([id(e) for e in table.entries], [id(d) for d in table.dicts], table.keys,
            table.fast, [id(e) for e in holders._scalars])


def test_refresh_keeps_a_column_s_rows_unread_and_the_rest_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stamped stack beside toys holding a derived scalar: the table and the scalars that
    :meth:`~derivgraph.runtime.holders.Holders.refresh` makes with the compile's columns
    (their rows' kinds and slots unread) are those it makes without them (every entry read)."""
    from derivgraph import planner
    from derivgraph.runtime import entry_columns
    from tests.runtime.test_entry_table import _compile

    kept: dict[str, Any] = {}
    real = entry_columns.held_columns

    def keep(*args: Any) -> Any:
        kept["held"] = real(*args)
        return kept["held"]

    monkeypatch.setattr(planner, "held_columns", keep)
    holders = _compile().holders
    assert len(kept["held"]) >= 4 and holders._scalars  # the toys' scalars
    holders.refresh(kept["held"])
    with_columns = _table(holders)
    holders.refresh()
    assert with_columns == _table(holders)
    assert len(holders.table) == len(holders.entries) - len(holders._scalars)
