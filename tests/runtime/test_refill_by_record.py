"""The refill table sorted by its targets' layout records (:func:`engine._by_record`).

Where the compile's layout book holds every target's storage, :class:`RefillTable` orders its
targets by their records (one per column: a key made once per record, each key's targets
gathered by one sweep) instead of sorting a key per target. The order, runs and spans must be
exactly what the stable sort by each target's ``(str(dtype), str(device), tuple(shape))`` and
:func:`~derivgraph.runtime.flat_copy.key_runs` give: checked on synthetic records (interleaved
columns, several dtypes, devices and shapes, two records of one key) and on compiled plans
(one layout, a float64 layer, a narrower layer) with a book holding every target under two
records per layout, against the reference of ``test_refill_table_order``. Canaries: a
planted order (a key's targets reversed) or spans cut per record go red.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.runtime import engine
from derivgraph.runtime.engine import RefillTable
from derivgraph.runtime.flat_copy import key_runs
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model
from tests.runtime.test_refill_table_order import _PLANTS, _same

_CPU, _META = torch.device("cpu"), torch.device("meta")


def _record(dtype: torch.dtype, shape: tuple[int, ...], device: torch.device = _CPU) -> Any:
    return ColumnLayout(torch.Tensor, dtype, torch.Size(shape), device, True)


def _reference(held: list[Any]) -> tuple[list[int], list[tuple[int, int]],
                                         list[tuple[int, int]]]:
    keys = [(str(r.dtype), str(r.device), tuple(r.shape)) for r in held]
    order = sorted(range(len(held)), key=keys.__getitem__)
    ordered = [keys[i] for i in order]
    return order, key_runs(ordered), key_runs(ordered, engine._KIND) or [(0, 0)]


def _synthetic(seed: int) -> list[Any]:
    records = [_record(torch.float32, (8,)), _record(torch.int64, (8,)),
               _record(torch.float32, (4, 2)), _record(torch.float64, (8,)),
               _record(torch.float32, (8,), _META), _record(torch.float32, (8,))]  # 0, 5: one key
    rng = random.Random(seed)
    return [rng.choice(records) for _ in range(500)]


@pytest.mark.parametrize("seed", range(5))
def test_by_record_is_the_sort_by_key(seed: int) -> None:
    held = _synthetic(seed)
    assert engine._by_record(held) == _reference(held)


def test_by_record_edges() -> None:
    assert engine._by_record([]) == _reference([]) == ([], [], [(0, 0)])
    one = [_record(torch.float32, (8,))]
    assert engine._by_record(one) == _reference(one)
    many = [_record(torch.float32, (i + 1,)) for i in range(engine.MAX_RECORDS + 1)]
    assert engine._by_record(many) is None  # the caller sorts per target


def _book(plan: Any) -> ColumnLayouts:
    """Every holder's storage under a record of its own layout, two records per layout (by
    the row's parity: interleaved columns of one key), as the compile's book records them."""
    groups: dict[Any, list[torch.Tensor]] = {}
    for i, t in enumerate(plan.holders.table.storages):
        groups.setdefault((t.dtype, t.device, t.shape, i % 2), []).append(t)
    book = ColumnLayouts()
    for (dtype, device, shape, _), tensors in groups.items():
        book.add(tensors, ColumnLayout(torch.Tensor, dtype, shape, device, True))
    return book


def _with_book(plant: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, RefillTable, int]:
    plan = compile_plan(_model(plant), [scaling_spec()])
    calls = []
    real = engine._by_record
    monkeypatch.setattr(engine, "_by_record", lambda held: calls.append(1) or real(held))
    table = RefillTable(plan.holders.table, plan._refill_targets(),
                        set(plan.constant_entries), set(plan._opaque()), _book(plan))
    return plan, table, len(calls)


@pytest.mark.parametrize("plant", _PLANTS, ids=["identical", "float64-layer", "narrow-layer"])
def test_the_table_from_the_book_is_in_the_keys_order(
        plant: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, table, used = _with_book(plant, monkeypatch)
    assert used == 1  # the book held every target: sorted by record
    assert _same(plan, table)


def test_canary_a_planted_order_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: each key's targets gathered in reverse (not stable): red."""
    real = engine._by_record

    def planted(held: list[Any]) -> Any:
        order, runs, spans = real(held)
        return [i for a, b in runs for i in reversed(order[a:b])], runs, spans

    monkeypatch.setattr(engine, "_by_record", planted)
    assert engine._by_record(_synthetic(0)) != _reference(_synthetic(0))
    plan, table, _ = _with_book({"dtype": torch.float64}, monkeypatch)
    assert not _same(plan, table)


def test_canary_spans_per_record_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: a span per record (not merged by dtype and device): red on a narrower
    layer, whose float32 targets then split into two spans."""
    real = engine._by_record
    monkeypatch.setattr(engine, "_by_record", lambda held: (*real(held)[:2], real(held)[1]))
    plan, table, _ = _with_book({"n": 6}, monkeypatch)
    assert not _same(plan, table)
