"""back46: an entry column's storage addresses, recorded at its startup (its storages' startup
pointers: storage offset 0), read by the layer proof and the row levels instead of reading
every storage's ``untyped_storage().data_ptr()`` again; each reader answers as the sweeps."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.column_layout import ColumnLayout, ColumnLayouts, storage_addresses
from derivgraph.compiler import codegen, lower, schedule_layers
from derivgraph.runtime import engine
from derivgraph.runtime.entry import Entry
from derivgraph.runtime.entry_columns import EntryColumn
from tests.runtime.test_column_layout import _book_on, _compile_keeping, _holds


def _layout(tensors: list[torch.Tensor]) -> ColumnLayout:
    t = tensors[0]
    return ColumnLayout(type(t), t.dtype, t.shape, t.device, True)


def _swept(tensors: list[torch.Tensor]) -> list[int]:
    return [t.untyped_storage().data_ptr() for t in tensors]


def test_a_book_answers_the_addresses_of_a_whole_recorded_column_only() -> None:
    tensors = [torch.zeros(3) for _ in range(4)]
    book = ColumnLayouts()
    book.add_addresses(tensors, _swept(tensors))  # not held under a record: not taken
    assert book.addresses(tensors) is None
    book.add(tensors, _layout(tensors))
    book.add_addresses(tensors, _swept(tensors))
    got = book.addresses(list(tensors))
    assert got == _swept(tensors)
    got.append(0)  # a new list each time
    assert book.addresses(tensors) == _swept(tensors)
    for other in (tensors[:3], tensors[::-1], [*tensors[:3], torch.zeros(3)], []):
        assert book.addresses(other) is None
    assert storage_addresses(tensors[::-1], book) == _swept(tensors[::-1])  # swept
    metas = [torch.empty(3, device="meta") for _ in range(2)]
    book.add(metas, _layout(metas))
    assert not book.add_addresses(metas, [0, 0]) and book.addresses(metas) is None


def _column(storages: list[torch.Tensor]) -> EntryColumn:
    column = EntryColumn("t", "x", [f"r{i}" for i in range(len(storages))],
                         [Entry.__new__(Entry) for _ in storages], [object() for _ in storages])
    column.storages = storages
    return column


def test_record_startup_records_addresses_only_of_storages_at_offset_0() -> None:
    fresh = [torch.empty(2, 3) for _ in range(3)]
    book = ColumnLayouts()
    book.add(fresh, _layout(fresh))
    column = _column(fresh)
    column.record_startup(book)
    assert [e.startup_ptr for e in column.entries] == _swept(fresh) == book.addresses(fresh)
    base = torch.zeros(20)
    offset = [base[0:6].view(2, 3), base[6:12].view(2, 3), torch.empty(2, 3)]
    book.add(offset, _layout(offset))
    _column(offset).record_startup(book)
    assert book.addresses(offset) is None  # an element past its storage's first byte
    assert storage_addresses(offset, book) == _swept(offset)
    unrecorded = [torch.empty(2) for _ in range(3)]
    _column(unrecorded).record_startup(book)  # held under no record
    assert book.addresses(unrecorded) is None


def test_the_compile_records_every_allocated_columns_addresses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    allocated = [c for c in made if type(c) is EntryColumn]
    assert allocated
    for column in allocated:
        assert book.addresses(column.storages) == _swept(column.storages)
    aliases = [c for c in made if type(c) is not EntryColumn]
    assert aliases and all(book.addresses(c.storages) is None for c in aliases)


def _lying(book: ColumnLayouts, made: list[EntryColumn]) -> ColumnLayouts:
    """``book`` with the first allocated column's recorded addresses the second one's: every
    row's two storages would be one."""
    first, second = [c for c in made if type(c) is EntryColumn][:2]
    liar = ColumnLayouts()
    for c in made:
        layout = book.common(c.storages)
        if layout is not None:
            liar.add(c.storages, layout)
            liar.add_addresses(c.storages, book.addresses(c.storages) or _swept(c.storages))
    liar.add_addresses(first.storages, _swept(second.storages))
    return liar


def test_layer_proof_with_the_addresses_answers_as_the_sweeps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, _ = _compile_keeping(monkeypatch)
    assert _holds(monkeypatch, plan, book) == _holds(monkeypatch, plan, None) == [True]


def test_canary_layer_proof_goes_by_lying_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    assert _holds(monkeypatch, plan, _lying(book, made)) == [False]  # the record was read
    assert _holds(monkeypatch, plan, None) == [True]


def _levels(plan: Any, book: ColumnLayouts | None) -> tuple[Any, ...]:
    """What ``row_levels`` answers for the plan's steps (the reader of the row levels)."""
    with _book_on(plan, book):
        steps = lower.lower_steps(plan.tensors)
        run_steps, _ = codegen.stage_directly(plan.tensors, steps)
        out = schedule_layers.row_levels(plan.tensors, run_steps, steps.layers)
    return out.copy_of, out.templates, out.fenced, out.nodes, out.shared


def test_row_levels_with_the_addresses_answer_as_the_sweeps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, _ = _compile_keeping(monkeypatch)
    got = _levels(plan, book)
    assert got == _levels(plan, None) and got[0]  # some rows proven


def test_canary_row_levels_go_by_lying_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, book, made = _compile_keeping(monkeypatch)
    liar = _lying(book, made)
    with _book_on(plan, book):
        steps = lower.lower_steps(plan.tensors)
        run_steps, _ = codegen.stage_directly(plan.tensors, steps)
    with _book_on(plan, liar):
        out = schedule_layers.row_levels(plan.tensors, run_steps, steps.layers)
    assert not out.copy_of  # an address seen twice: no row taken
    assert _levels(plan, None)[0]


def test_guard_dims_are_each_shapes_shared_by_shape() -> None:
    a, b = torch.Size([2, 3]), torch.Size([4])
    shapes = [a, a, b, torch.Size([2, 3]), torch.Size([])]
    sizes, strides = engine._dims(shapes)
    assert sizes == [list(s) for s in shapes]
    assert strides == [[None] * len(s) for s in shapes]
    assert sizes[0] is sizes[1] is sizes[3]  # one list per distinct shape
    assert engine._dims([]) == ([], [])


@pytest.mark.skipif(engine._TensorGuards is None, reason="this torch has no TensorGuards")
def test_canary_a_guard_of_shared_dims_still_checks_each_tensor() -> None:
    # the tensors of one shape share one sizes list: each is still checked on its own (a
    # guard that read one list per shape once would pass the [3, 2] below)
    right = [torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(4)]
    layouts = engine.Layouts([t.dtype for t in right], [t.shape for t in right],
                             [t.numel() for t in right])
    layouts.guard(right)
    assert layouts._guard is not None and layouts._guard.check(*right)
    assert not layouts._guard.check(right[0], torch.zeros(3, 2), right[2])
    assert not layouts._guard.check(right[0], right[1], torch.zeros(5))
