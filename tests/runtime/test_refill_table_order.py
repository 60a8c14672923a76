"""The refill table's targets in (dtype, device, shape) order, as the key names them.

:class:`RefillTable` sorts its targets by the names of their dtype and device and their shape
(stable, so targets of one layout keep the pass's order), read one property per sweep. On plans
of one layout, of two dtypes (a float64 layer) and of two shapes (a narrower layer) the ids,
positions, spans, per-target flags (constant, engine-made) and lists are exactly what sorting by
each target's own ``(str(dtype), str(device), tuple(shape))`` gives, computed here by hand; the
runs of one layout, the spans, the byte counts, the element counts and the flat copies read off
the sorted keys are what each target's own tensor gives (:func:`layout_spans`, ``numel()``,
:func:`~derivgraph.runtime.flat_copy.flat_runs` over the tensors). Canaries: the table built
with its order reversed, or with its runs cut by (dtype, device) alone, is caught by the same
comparison.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.engine import RefillTable, layout_spans
from derivgraph.runtime.flat_copy import flat_runs
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model

_PLANTS = [None, {"dtype": torch.float64}, {"n": 6}]


def _table(plant: Any) -> tuple[Any, RefillTable]:
    plan = compile_plan(_model(plant), [scaling_spec()])
    table = RefillTable(plan.holders.table, plan._refill_targets(),
                        set(plan.constant_entries), set(plan._opaque()))
    return plan, table


def _expected(plan: Any) -> tuple[list[str], list[int]]:
    table = plan.holders.table
    position = {e.node.id: i for i, e in enumerate(table.entries)}
    usable = [t for t in plan._refill_targets() if t in position and table.fast[position[t]]]

    def layout(t: str) -> tuple[str, str, tuple[int, ...]]:
        s = table.storages[position[t]]
        return str(s.dtype), str(s.device), tuple(s.shape)

    usable.sort(key=layout)
    return usable, [position[t] for t in usable]


def _same(plan: Any, table: RefillTable) -> bool:
    ids, index = _expected(plan)
    storages = plan.holders.table.storages
    constants, opaque = set(plan.constant_entries), set(plan._opaque())
    return table.ids == ids and table.index == index \
        and table.is_constant == [t in constants for t in ids] \
        and table.engine == bytes(t in opaque for t in ids) and type(table.engine) is bytes \
        and all(s is storages[i] for s, i in zip(table.storages, index)) \
        and table.spans == layout_spans([storages[i] for i in index]) \
        and table.shapes == [storages[i].shape for i in index] \
        and table.dtypes == [storages[i].dtype for i in index] \
        and table.nbytes.tolist() == [storages[i].numel() * storages[i].element_size()
                                      for i in index] and table.nbytes.typecode == "q" \
        and table._numels == [storages[i].numel() for i in index] \
        and _runs(table.flat) == _runs(flat_runs([storages[i] for i in index]))


def _runs(flat: list) -> list[tuple[int, int, list[int]]]:
    return [(a, b, copy.starts.tolist()) for a, b, copy in flat]


@pytest.mark.parametrize("plant", _PLANTS, ids=["identical", "float64-layer", "narrow-layer"])
def test_the_table_is_in_the_keys_order(plant: Any) -> None:
    plan, table = _table(plant)
    assert len(table.ids) == 36  # inv, prod and strides of 12 layers
    assert _same(plan, table)
    if plant is not None and "dtype" in plant:
        assert len(table.spans) == 3  # float32, float64, int64
        assert table.dtypes[: len(table.dtypes) - 12][-2:] == [torch.float64] * 2


def test_the_per_target_flags_follow_the_sorted_targets() -> None:
    """The flags a partly rebuilt read masks (constant, engine-made) are in the sorted order,
    as the mask is. Targets handed over constants first (the int64 strides) are sorted behind
    the float32 ones: the flags move with them, and a read that rebuilds only the non-constant
    targets copies no constant."""
    plan = compile_plan(_model(None), [scaling_spec()])
    constants = set(plan.constant_entries)
    targets = sorted(plan._refill_targets(), key=lambda t: t not in constants)
    table = RefillTable(plan.holders.table, targets, constants, set(plan._opaque()))
    assert targets[0] in constants and table.ids[0] not in constants  # reordered
    assert table.is_constant == [t in constants for t in table.ids]
    assert table.is_constant[-len(constants):] == [True] * len(constants) == [True] * 12
    mask = tuple(not flag for flag in table.is_constant)
    assert table._part(mask).constants is False


def test_canary_a_reversed_order_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug in the stable sort by rank (taken by more than ``MAX_RECORDS`` layouts:
    forced here); the sweep per rank's canaries are in ``test_refill_by_key``."""
    monkeypatch.setattr(engine, "MAX_RECORDS", 0)
    real = sorted
    monkeypatch.setattr(engine, "sorted", lambda items, key: real(items, key=key)[::-1],
                        raising=False)
    plan, table = _table({"dtype": torch.float64})
    assert not _same(plan, table)


def test_canary_runs_cut_by_dtype_and_device_alone_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the runs of one layout taken by (dtype, device) only (the spans); a
    narrower layer then shares a run with the others (its byte counts and flat copies
    wrong): red."""
    real = engine._by_key

    def planted(items: list[Any], key: Any) -> Any:
        order, _, spans = real(items, key)
        return order, spans, spans

    monkeypatch.setattr(engine, "_by_key", planted)
    plan, table = _table({"n": 6})
    assert not _same(plan, table)
