"""The holder binding finds its held columns' rows among the plan's entries at the rows the
plan's :class:`~derivgraph.runtime.entry.EntryTable` found (``EntryTable.rows``) instead of
searching them by identity again (:func:`~derivgraph.runtime.accessors.column_rows`): the
same slices, the same taken positions, and no search in a compile. Canaries: a column whose
rows are not its entry column's very list, a table of other entries and a column whose rows
are already taken are each searched (or refused) as before."""

from __future__ import annotations

from typing import Any

from derivgraph import compile_plan
from derivgraph.runtime import holders as holders_module
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = holders_module.column_rows
    monkeypatch.setattr(holders_module, "column_rows", lambda *a: calls.append(1) or real(*a))
    return calls


def _held(plan: Any) -> list[Any]:
    return [(c.name, c.entries, c.owners, c) for c in plan.entries.columns]


def test_a_compile_searches_no_column_and_finds_what_the_search_finds(monkeypatch):
    calls = _counting(monkeypatch)
    plan = compile_plan(scaling_model(6), [scaling_spec()])
    assert calls == []
    entries, held = list(plan.entries.by_id.values()), _held(plan)
    by_table = holders_module._found_rows(entries, held, plan.entries)
    assert calls == []
    searched = holders_module._found_rows(entries, held)
    assert len(calls) == len(held) == 4
    assert by_table == searched and None not in by_table[0]
    assert plan.holders._table is plan.entries


def test_canary_rows_that_are_not_the_columns_own_list_are_searched(monkeypatch):
    plan = compile_plan(scaling_model(6), [scaling_spec()])
    calls = _counting(monkeypatch)
    entries, held = list(plan.entries.by_id.values()), _held(plan)
    copied = [(n, list(rows), owners, c) for n, rows, owners, c in held]
    found = holders_module._found_rows(entries, copied, plan.entries)
    assert len(calls) == 4 and found == holders_module._found_rows(entries, held)


def test_canary_a_table_of_other_entries_is_not_taken(monkeypatch):
    plan = compile_plan(scaling_model(6), [scaling_spec()])
    calls = _counting(monkeypatch)
    entries, held = list(plan.entries.by_id.values()), _held(plan)
    fewer = entries[:-1]  # not the table's entries: every column searched there
    found, _ = holders_module._found_rows(fewer, held, plan.entries)
    assert len(calls) == 4 and found[-1] is None


def test_canary_rows_already_taken_are_refused(monkeypatch):
    plan = compile_plan(scaling_model(6), [scaling_spec()])
    entries, held = list(plan.entries.by_id.values()), _held(plan)
    twice = [held[0], held[0]]  # one column's rows held twice: the second is refused
    found, taken = holders_module._found_rows(entries, twice, plan.entries)
    assert found[0] is not None and found[1] is None
    assert (found, taken) == holders_module._found_rows(entries, twice)
