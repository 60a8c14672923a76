"""While the compile lowers (``BoundTensors.column_rows`` set), ``bound_values`` of an entry
column's ids (what ``bind_tensors`` asks for each stamped column) is answered by the column's
storages, no row's entry read: the same objects, in order, as each row's entry's storage
(the per-entry path). Canary: the answer against every row entry's storage, and with the
rows held by column, asking makes no row's entry; outside the compile every entry is read
(a written entry's storage is seen)."""

from __future__ import annotations

from operator import is_
from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.runtime.entry import HeldRows
from derivgraph.runtime.plan import Plan
from derivgraph.runtime.storage import BoundTensors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 9


def _compile(hold: bool) -> Plan:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    keep = Plan.hold_rows
    if not hold:
        Plan.hold_rows = lambda self: False  # type: ignore[method-assign]
    try:
        return compile_plan(model, [scaling_spec()])
    finally:
        Plan.hold_rows = keep  # type: ignore[method-assign]


def test_a_column_is_bound_from_its_storages() -> None:
    plan = _compile(hold=False)
    rows = plan.entries.rows
    assert len(rows) == 4 and type(plan.tensors.entries) is dict
    assert plan.tensors.column_rows == ()  # the compile's window only
    plan.tensors.column_rows = rows  # as the compile sets them
    for _, column in rows:
        ids = list(column.ids)  # a copy: what bound_values makes of its refs
        got = plan.tensors.bound_values(ids)
        want = [plan.entries[i].storage for i in ids]
        assert len(got) == len(want) == LAYERS - 1 and all(map(is_, got, want))
        assert got is not column.storages  # the caller's list, not the column's
        # the row tensors' values: the formulas, row by row
        for i, tensor in zip(ids, got):
            owner = plan.model.get_submodule(i.rpartition(".")[0])
            name = i.rpartition(".")[2]
            expected = {"inv": lambda m: 1.0 / m.scale, "prod": lambda m: m.scale * m.weight,
                        "strides": lambda m: torch.full([8], 7, dtype=torch.int64),
                        "scale_alias": lambda m: m.scale}[name](owner)
            assert torch.equal(tensor, expected)
    # a mixed request (a column's ids and another entry) takes the per-entry path: the same
    first = rows[0][1]
    part = first.ids[:3]  # a column's first rows only: only those
    assert all(map(is_, plan.tensors.bound_values(part), [plan.entries[i].storage for i in part]))
    assert len(plan.tensors.bound_values(part)) == 3
    mixed = [*first.ids[:2], next(iter(plan.entries.generic))]
    assert all(map(is_, plan.tensors.bound_values(mixed),
                   [plan.entries[i].storage for i in mixed]))


def test_asking_for_a_held_column_makes_no_row_entry() -> None:
    plan = _compile(hold=True)
    held = plan.entries.by_id
    assert type(held) is HeldRows and plan.tensors.entries is held
    before = len(held._kept)
    plan.tensors.column_rows = plan.entries.rows  # as the compile sets them
    for _, column in plan.entries.rows:
        got = plan.tensors.bound_values(list(column.ids))
        assert all(map(is_, got, column.storages))
    assert len(held._kept) == before  # no row's entry made


def test_the_compile_binds_by_column_and_then_reads_entries() -> None:
    seen: list[int] = []
    keep = BoundTensors.bound_values

    def spy(self: BoundTensors, refs: Any, missing: Any = None) -> list[Any]:
        seen.append(len(self.column_rows))
        return keep(self, refs, missing)

    BoundTensors.bound_values = spy  # type: ignore[method-assign]
    try:
        plan = _compile(hold=False)
    finally:
        BoundTensors.bound_values = keep  # type: ignore[method-assign]
    assert 4 in seen and plan.tensors.column_rows == ()
    # after it, a row entry written (outside the columns) is what binds
    column = plan.entries.rows[0][1]
    entry = plan.entries[column.ids[1]]
    entry.storage = torch.zeros_like(entry.storage)
    got = plan.tensors.bound_values(list(column.ids))
    assert got[1] is entry.storage and got[1] is not column.storages[1]
