"""``bound_values`` of an entry column's ids whose rows the entry table holds by column
(what ``bind_tensors`` asks for each stamped column) is answered by the column's rows'
storages (:meth:`~derivgraph.runtime.entry.ColumnRows.read`), no row's entry made: the same
objects, in order, as each row's entry's storage (the per-entry path). A row whose entry
was made and written after the compile binds as written (its entry is its record): the one
rule, no compile-only window. Canary: the answer against every row entry's storage and the
formulas, and a written row."""

from __future__ import annotations

from operator import is_
from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.runtime.entry import ColumnRows, HeldRows
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 9


def _compile() -> Plan:
    torch.manual_seed(0)
    return compile_plan(scaling_model(LAYERS), [scaling_spec()])


def test_a_column_is_bound_from_its_storages() -> None:
    plan = _compile()
    rows = plan.entries.rows
    assert len(rows) == 4 and type(plan.tensors.entries) is HeldRows
    for _, column in rows:
        ids = list(column.ids)  # a copy: what bound_values makes of its refs
        got = plan.tensors.bound_values(ids)
        assert not column.entries.made  # no row's entry made
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
    # a prefix of a column's ids, and a mixed request, take the per-entry path: the same
    first = rows[0][1]
    part = first.ids[:3]
    assert all(map(is_, plan.tensors.bound_values(part), [plan.entries[i].storage for i in part]))
    assert len(plan.tensors.bound_values(part)) == 3
    mixed = [*first.ids[:2], next(iter(plan.entries.generic))]
    assert all(map(is_, plan.tensors.bound_values(mixed),
                   [plan.entries[i].storage for i in mixed]))


def test_the_compile_binds_by_column() -> None:
    seen: list[str] = []
    keep = ColumnRows.read

    def spy(self: ColumnRows, name: str) -> list[Any]:
        seen.append(name)
        return keep(self, name)

    ColumnRows.read = spy  # type: ignore[method-assign]
    try:
        _compile()
    finally:
        ColumnRows.read = keep  # type: ignore[method-assign]
    assert seen.count("storage") >= 4


def test_a_written_row_binds_as_written() -> None:
    plan = _compile()
    column = plan.entries.rows[0][1]
    entry = plan.entries[column.ids[1]]
    entry.storage = torch.zeros_like(entry.storage)
    got = plan.tensors.bound_values(list(column.ids))
    assert got[1] is entry.storage and got[1] is not column.storages[1]
    assert all(map(is_, got[2:], column.storages[2:])) and got[0] is column.storages[0]


def test_a_table_after_the_entries_binds_what_it_holds() -> None:
    """``bound_values`` of refs no entry binds: each table in ``bound``'s order is asked
    (an empty one answers nothing); a one-item table binding them answers, else ``missing``.
    Canary: the answer against ``bound`` ref by ref."""
    plan = _compile()
    tensors = plan.tensors
    assert not tensors.views and not tensors.stages and len(tensors.constants) == 1
    const = next(iter(tensors.constants))
    got = tensors.bound_values([const, const])
    assert got[0] is got[1] is tensors.bound(const) is tensors.constants[const]
    assert tensors.bound_values(["no.such", "nor.this"], "gone") == ["gone", "gone"]
    tensors.stages = {"%9:staged": torch.zeros(())}
    got = tensors.bound_values(["%9:staged"])
    assert got == [tensors.stages["%9:staged"]] and got[0] is tensors.bound("%9:staged")
    assert tensors.bound_values(["%9:staged", const]) == [tensors.stages["%9:staged"],
                                                         tensors.constants[const]]
