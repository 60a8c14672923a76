"""An entry column keeps its rows' planned values for the compile (``EntryColumn.values``).

The compile's allocation and its bit check read each entry column's rows' eager values; the
column keeps adoption's extras for them (an allocated entry's extra is its value, the very
object the compile's value table holds at its id), so neither reads the 75k ids again
(``planner._column_values``). Asserted by identity against the value table, on the column
made from adoption's proof and on the one made row by row (no adoption proof handed over),
with the plan dropping the values after the compile. Canary: a column's values in another
row order (the kept list read as is) makes the identity test go red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import planner as planner_module
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns as columns_module
from derivgraph.runtime.entry_columns import AliasColumn, EntryColumn
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model


def _compile(monkeypatch: pytest.MonkeyPatch, adoption_proof: bool) -> tuple[Any, list[Any]]:
    """Compile the scaling model (stamping on); the plan and, for each read of a column's
    values, (the column, what was read, whether it is the kept list, the value table)."""
    reads: list[Any] = []
    read = planner_module._column_values
    build = columns_module.entry_columns

    def spy(column: EntryColumn, values: dict[str, Any]) -> list[Any]:
        got = read(column, values)
        reads.append((column, list(got), got is column.values, values))
        return got

    def without_proof(tables: Any, planned: Any, owners: Any, proven: Any = ()) -> Any:
        return build(tables, planned, owners, proven if adoption_proof else ())

    monkeypatch.setattr(planner_module, "_column_values", spy)
    monkeypatch.setattr(planner_module, "entry_columns", without_proof)
    with stamping(True):
        plan = planner_module.compile_plan(_model(), [scaling_spec()])
    return plan, reads


@pytest.mark.parametrize("adoption_proof", [True, False])
def test_kept_values_are_the_value_tables_objects(monkeypatch: pytest.MonkeyPatch,
                                                  adoption_proof: bool) -> None:
    plan, reads = _compile(monkeypatch, adoption_proof)
    columns = [c for c in plan.entries.columns if type(c) is EntryColumn]
    assert len(columns) == 3
    assert all(is_kept for column, _, is_kept, _ in reads if type(column) is EntryColumn)
    kept = [(column, got, values) for column, got, is_kept, values in reads if is_kept]
    # each allocated column read from what it kept by its allocation, the written ones
    # (inv, prod: every row written by the pass) again by the bit check
    assert sorted(c.name for c, _, _ in kept) == ["inv", "inv", "prod", "prod", "strides"]
    for column, got, values in kept:
        assert len(got) == len(column.ids) > 1
        assert all(a is values[i] for a, i in zip(got, column.ids))
        for storage, value in zip(column.storages, got):  # filled from them
            assert torch.equal(storage, value)


def test_the_plan_keeps_no_values(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, reads = _compile(monkeypatch, True)
    assert reads
    assert all(c.values == [] for c in plan.entries.columns)
    assert any(type(c) is AliasColumn for c in plan.entries.columns)
