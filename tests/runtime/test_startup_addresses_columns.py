"""entry75: ``BoundTensors.startup_addresses`` takes its column rows' storages and startup
addresses from the plan's entry columns (:func:`~derivgraph.runtime.storage._recorded_spans`)
instead of reading each row's entry; checked against reading every entry, and each refusal
(a column not recorded, one short, one not found in the entries) reads the entries instead."""

from __future__ import annotations

from itertools import compress
from typing import Any

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import storage
from derivgraph.runtime.entry import keeps_startup
from derivgraph.runtime.storage import _recorded_spans, _restorable
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan() -> Any:
    with stamping(True):
        return planner.compile_plan(scaling_model(6), [scaling_spec()])


def _read_every_entry(plan: Any) -> tuple[list[Any], list[int]]:
    """The startup check's tensors and addresses as each entry holds them (the old reading)."""
    entries = list(plan.tensors.entries.values())
    kept = list(compress(entries, _restorable(entries)))
    return [e.storage for e in kept], [e.startup_ptr for e in kept]


def _fresh(plan: Any) -> Any:
    plan.tensors._startup = None  # made again on the next ask
    return plan.tensors.startup_addresses()


def test_every_column_is_taken_and_the_check_equals_the_entries_reading() -> None:
    plan = _plan()
    entries = list(plan.tensors.entries.values())
    spans = _recorded_spans(entries, plan.entries.columns)
    assert len(plan.entries.columns) == 4
    assert [c for _r, c in spans] == list(plan.entries.columns)
    for rows, column in spans:
        assert entries[rows] == column.entries
        assert all(a is b for a, b in zip(entries[rows], column.entries))
    check = _fresh(plan)
    assert plan.tensors._startup_mask == bytes(keeps_startup(entries))  # the mask by column
    assert _restorable(entries, spans) == _restorable(entries)
    tensors, ptrs = _read_every_entry(plan)
    assert len(check.tensors) == len(tensors) > 0
    assert all(a is b for a, b in zip(check.tensors, tensors))
    assert check.ptrs == ptrs
    assert check.intact()


def _spy(monkeypatch: Any) -> list[Any]:
    taken: list[Any] = []
    real = storage._recorded_spans

    def keep(entries: Any, columns: Any) -> Any:
        taken.append(real(entries, columns))
        return taken[-1]

    monkeypatch.setattr(storage, "_recorded_spans", keep)
    return taken


def test_a_column_not_recorded_or_short_is_read_from_the_entries(monkeypatch: Any) -> None:
    plan = _plan()
    columns = plan.entries.columns
    columns[0].ptrs = None  # not recorded
    # planted (+1): a column taken would show in the addresses
    columns[1].ptrs = [p + 1 for p in columns[1].ptrs[:-1]]  # one short
    columns[2].ptrs = [p + 1 for p in columns[2].ptrs]
    columns[2].storages = columns[2].storages[:-1]  # one storage short
    taken = _spy(monkeypatch)
    check = _fresh(plan)
    assert [c for _r, c in taken[-1]] == [columns[3]]
    tensors, ptrs = _read_every_entry(plan)
    assert all(a is b for a, b in zip(check.tensors, tensors)) and check.ptrs == ptrs


def test_planted_column_addresses_are_taken_at_their_rows() -> None:
    plan = _plan()
    column = plan.entries.columns[0]
    column.ptrs = [p + 1 for p in column.ptrs]  # planted: proves the column is read
    check = _fresh(plan)
    entries = list(plan.tensors.entries.values())
    mask = _restorable(entries)
    planted = {id(e) for e in column.entries}
    expected = [e.startup_ptr + (id(e) in planted) for e in compress(entries, mask)]
    assert check.ptrs == expected


def test_a_column_not_in_the_entries_or_another_table_is_refused() -> None:
    plan = _plan()
    entries = list(plan.tensors.entries.values())
    column = plan.entries.columns[0]
    column.entries = list(column.entries)[::-1]  # the rows out of order: not found
    assert column not in [c for _r, c in _recorded_spans(entries, plan.entries.columns)]
    plan.entries.columns[1].ptrs = [p + 1 for p in plan.entries.columns[1].ptrs]  # planted
    plan.tensors.entries = dict(plan.tensors.entries)  # not the table's own dict: no column
    check = _fresh(plan)
    tensors, ptrs = _read_every_entry(plan)
    assert all(a is b for a, b in zip(check.tensors, tensors)) and check.ptrs == ptrs


def test_the_mask_follows_each_column_s_keeps_and_reads_the_rest() -> None:
    plan = _plan()
    entries = list(plan.tensors.entries.values())
    spans = _recorded_spans(entries, plan.entries.columns)
    truth = bytes(keeps_startup(entries))
    assert truth.count(1) > 0 and truth.count(0) > 0
    rows, column = spans[0]
    assert column.keeps and set(truth[rows]) == {1}
    alias = [(r, c) for r, c in spans if not c.keeps]
    assert alias and set(truth[alias[0][0]]) == {0}
    # a generic entry changed: read (the rest of the entries), not assumed
    generic = next(i for i, e in enumerate(entries) if truth[i])
    assert all(generic not in range(len(entries))[r] for r, _c in spans)
    assert _restorable(entries, spans)[generic] == 1
    entries[generic].startup_data, kept = None, entries[generic].startup_data
    try:
        assert _restorable(entries, spans)[generic] == 0
    finally:
        entries[generic].startup_data = kept
    # a column whose keeps is planted False: its rows are 0 (its answer is taken, not read)
    type(column).keeps = False
    try:
        assert set(_restorable(entries, spans)[rows]) == {0}
    finally:
        type(column).keeps = True
