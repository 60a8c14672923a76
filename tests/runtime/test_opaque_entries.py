"""The plan's opaque engine tensors (``Plan._opaque``) are found among the generic entries.

An entry column's rows are of kind attribute or alias (``entry_columns`` proves it row by row
or from their one declaration), never engine tensors, so the refill's opaque targets are read
from :attr:`~derivgraph.runtime.entry.EntryTable.generic` only. Asserted on a stamped compile
whose layers also hold an engine tensor (adopted: generic entries): the same list, in the same
order, as :func:`~derivgraph.runtime.engine.opaque_entries` over every entry, with only the
generic entries read. Canary: ``_opaque`` reading every entry again turns the read count red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import DerivedTensor, Spec
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import plan as plan_module
from derivgraph.runtime.engine import opaque_entries
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAYERS = 12


def _engine_spec() -> Spec:
    """Each layer's engine tensor ``table`` (a second spec beside the stamped scaling one)."""
    return Spec(name="engine_table", target=scaling_spec().target,
                derived=[DerivedTensor(name="table", kind="engine")])


def _model() -> Any:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    for i, layer in enumerate(model.layers):
        layer.table = torch.full((3,), float(i))
    return model


def test_the_opaque_entries_are_the_generic_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []

    def counted(entries: Any) -> list[str]:
        read.append(len(entries))
        return opaque_entries(entries)

    monkeypatch.setattr(plan_module, "opaque_entries", counted)
    with stamping(True):
        plan = compile_plan(_model(), [scaling_spec(), _engine_spec()])
    columns = plan.entries.columns
    assert columns and sum(len(c.ids) for c in columns) >= 4 * (LAYERS - 1)
    want = opaque_entries(plan.entries.by_id)
    assert want == [f"layers.{i}.table" for i in range(LAYERS)]
    assert plan._opaque() == want
    assert read == [len(plan.entries.generic)]  # found once, over the generic entries only
    assert len(plan.entries.generic) < len(plan.entries)


def test_the_refill_table_marks_exactly_the_opaque_targets() -> None:
    """The refill table's ``engine`` flags are the opaque engine tensors' (every other target
    False, also where the plan has none), and a partly rebuilt read that leaves one of them
    unrebuilt is refused (the per-entry path and ``check_refillable`` decide)."""
    from derivgraph.runtime import engine

    with stamping(True):
        plan = compile_plan(_model(), [scaling_spec(), _engine_spec()])
        plain = compile_plan(_model(), [scaling_spec()])
    table = plan._refill_table
    opaque = set(plan._opaque())
    # one byte per target (1: an engine tensor), no list of bools
    assert opaque and type(table.engine) is bytes
    assert list(map(bool, table.engine)) == [t in opaque for t in table.ids]
    assert plain._refill_table.engine == bytes(len(plain._refill_table.ids))
    first = table.engine.index(1)
    rebuilt = tuple(i != first for i in range(len(table.ids)))
    assert table._part(rebuilt) is engine._REFUSED
    assert table._part(tuple(map(bool, table.engine))) is not engine._REFUSED  # only they rebuilt
