"""The refill table grouped by its targets' layouts (:func:`engine._by_key`).

:class:`RefillTable` orders its targets by layout: where the compile's layout book holds every
target's storage, by their records (one per column: a key made once per record), else by each
target's key; each key's targets gathered by one sweep (for more than ``MAX_RECORDS`` layouts,
one stable sort by the keys' ranks) instead of sorting a key per target.
The order, runs and spans must be exactly what the stable sort by each target's
``(str(dtype), str(device), tuple(shape))`` and :func:`~derivgraph.runtime.flat_copy.key_runs`
give: checked on synthetic records (interleaved
columns, several dtypes, devices and shapes, two records of one key) and on compiled plans
(one layout, a float64 layer, a narrower layer), with a book holding every target under two
records per layout and without a book, against the reference of ``test_refill_table_order``.
Canaries, both ways: a planted order (a key's targets reversed) or spans cut per layout go
red.
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
@pytest.mark.parametrize("sweeps", [True, False], ids=["sweep-per-rank", "sort-by-rank"])
def test_by_key_is_the_sort_by_key(seed: int, sweeps: bool,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if not sweeps:
        monkeypatch.setattr(engine, "MAX_RECORDS", 0)
    held = _synthetic(seed)
    assert engine._by_key(held, engine._record_key) == _reference(held)
    keys = list(map(engine._record_key, held))  # by the keys themselves (no book)
    assert engine._by_key(keys, engine._as_key) == _reference(held)


def test_by_key_edges() -> None:
    assert engine._by_key([], engine._record_key) == _reference([]) == ([], [], [(0, 0)])
    one = [_record(torch.float32, (8,))]
    assert engine._by_key(one, engine._record_key) == _reference(one)
    many = [_record(torch.float32, (i % 7 + 1,)) for i in range(3 * engine.MAX_RECORDS)]
    many += [_record(torch.float64, (i + 1,)) for i in range(engine.MAX_RECORDS)]
    assert engine._by_key(many, engine._record_key) == _reference(many)  # sorted by rank



def test_by_key_gathers_a_rank_by_equality_and_counts_what_it_gathered() -> None:
    """A rank's sweep finds its items as a dict does (equal keys, distinct objects), and each
    run is as long as its sweep gathered (no second count)."""
    shapes = [(8,), (4, 2), (8,), (8,), (4, 2)]
    keys = [("torch.float32", "cpu", tuple(s)) for s in shapes]  # a new tuple per item
    assert len({id(k) for k in keys}) == len(keys)
    assert engine._by_key(keys, engine._as_key) == \
        ([1, 4, 0, 2, 3], [(0, 2), (2, 5)], [(0, 5)])

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


def _with_book(plant: Any, monkeypatch: pytest.MonkeyPatch, book: bool = True) \
        -> tuple[Any, RefillTable, list[Any]]:
    """A plan of ``plant``, its refill table (with a book holding every target, or none) and
    the key functions the table grouped by."""
    plan = compile_plan(_model(plant), [scaling_spec()])
    calls: list[Any] = []
    real = engine._by_key
    monkeypatch.setattr(engine, "_by_key",
                        lambda items, key: calls.append(key) or real(items, key))
    table = RefillTable(plan.holders.table, plan._refill_targets(),
                        set(plan.constant_entries), set(plan._opaque()),
                        _book(plan) if book else None)
    return plan, table, calls


@pytest.mark.parametrize("plant", _PLANTS, ids=["identical", "float64-layer", "narrow-layer"])
@pytest.mark.parametrize("book", [True, False], ids=["book", "no-book"])
def test_the_grouped_table_is_in_the_keys_order(
        plant: Any, book: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, table, used = _with_book(plant, monkeypatch, book)
    # with the book: grouped by record; without: by each target's key
    assert used == [engine._record_key if book else engine._as_key]
    assert _same(plan, table)


@pytest.mark.parametrize("book", [True, False], ids=["book", "no-book"])
def test_canary_a_planted_order_is_caught(book: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: each key's targets gathered in reverse (not stable): red."""
    real = engine._by_key

    def planted(items: list[Any], key: Any) -> Any:
        order, runs, spans = real(items, key)
        return [i for a, b in runs for i in reversed(order[a:b])], runs, spans

    monkeypatch.setattr(engine, "_by_key", planted)
    assert engine._by_key(_synthetic(0), engine._record_key) != _reference(_synthetic(0))
    plan = compile_plan(_model({"dtype": torch.float64}), [scaling_spec()])
    table = RefillTable(plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
                        set(plan._opaque()), _book(plan) if book else None)
    assert not _same(plan, table)


@pytest.mark.parametrize("book", [True, False], ids=["book", "no-book"])
def test_canary_spans_per_layout_are_caught(book: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: a span per layout (not merged by dtype and device): red on a narrower
    layer, whose float32 targets then split into two spans."""
    real = engine._by_key

    def planted(items: list[Any], key: Any) -> Any:
        order, runs, _ = real(items, key)
        return order, runs, runs

    monkeypatch.setattr(engine, "_by_key", planted)
    plan = compile_plan(_model({"n": 6}), [scaling_spec()])
    table = RefillTable(plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
                        set(plan._opaque()), _book(plan) if book else None)
    assert not _same(plan, table)
