"""An entry column's storages allocated in one sweep where the values are proven row-major.

:func:`~derivgraph.adoption.allocate_column` is :func:`~derivgraph.adoption.allocate_like` of
every value; where the caller proved every value a plain strided tensor with the row-major
strides of its shape, it makes them with ``torch.empty_like`` (its default format keeps such
strides, which are the contiguous ones). The proof comes from the values' layout record:
``columns._record`` records an evaluated column (one result unbound along dim 0) contiguous
only where the first slice's strides are the row-major ones, and ``EntryColumn.allocate``
also reads the strides once for a column of one shared object. Asserted against
``allocate_like`` row by row (type, dtype, shape, strides, offset, device, grad, a storage of
its own), on strides that ``is_contiguous()`` accepts but are not row-major (a size-1 dim),
on transposed values (the per-value path) and on the stamped compile (every column takes the
sweep). Canaries: ``_record`` without the strides check, or ``_row_major`` taking any
one-type record, turn tests here red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import adoption
from derivgraph import planner as planner_module
from derivgraph.adoption import allocate_column, allocate_like
from derivgraph.column_layout import ColumnLayouts, row_major
from derivgraph.compiler import columns as columns_module
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model


def _facts(t: torch.Tensor) -> tuple[Any, ...]:
    return (type(t), t.dtype, t.shape, t.stride(), t.storage_offset(), t.device,
            t.requires_grad, t.is_contiguous(), t.layout)


def _same_as_allocate_like(got: list[torch.Tensor], values: list[torch.Tensor],
                           kind: TensorKind) -> None:
    want = [allocate_like(v, kind) for v in values]
    assert [_facts(t) for t in got] == [_facts(t) for t in want]
    if not got or not got[0].numel():
        return  # no memory: no address to compare
    ptrs = {t.untyped_storage().data_ptr() for t in got}
    assert len(ptrs) == len(got)  # each its own fresh storage
    assert not any(t.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
                   for t in got for v in values)


def _column(values: list[torch.Tensor]) -> EntryColumn:
    """An entry column of ``len(values)`` rows (entries are placeholders: only their
    ``storage`` is set)."""
    class _Entry:
        storage: Any = None

    n = len(values)
    column = EntryColumn("t.x", "x", [f"r{i}.x" for i in range(n)],
                         [_Entry() for _ in range(n)], [None] * n)  # type: ignore[misc]
    return column


def _allocate(column: EntryColumn, values: list[torch.Tensor],
              book: ColumnLayouts) -> list[Any]:
    asked: list[Any] = []

    def spy(vals: list[torch.Tensor], kind: TensorKind, row_major: bool = False) -> Any:
        asked.append(row_major)
        return allocate_column(vals, kind, row_major)

    column.allocate(values, [], spy, book)
    return asked


@pytest.mark.parametrize("kind", [TensorKind.ATTRIBUTE, TensorKind.BUFFER,
                                  TensorKind.PARAMETER])
@pytest.mark.parametrize("shape", [(8,), (3, 4), (2, 1, 5), (1,), (0, 3)])
def test_the_sweep_gives_what_allocate_like_gives(kind: TensorKind,
                                                  shape: tuple[int, ...]) -> None:
    values = list(torch.rand(6, *shape).unbind(0))
    assert all(v.stride() == row_major(v.shape) for v in values)
    _same_as_allocate_like(allocate_column(values, kind, True), values, kind)
    _same_as_allocate_like(allocate_column(values, kind, False), values, kind)


@pytest.mark.parametrize("make", [
    lambda: torch.rand(6, 3, 4).transpose(1, 2),  # slices transposed: not contiguous
    lambda: torch.empty_strided((6, 1, 3), (3, 100, 1)).normal_(),  # contiguous, not row-major
    lambda: torch.rand(6, 8).t().contiguous().t(),  # each slice strided by 6
], ids=["transposed", "size1_odd_stride", "strided"])
def test_a_result_not_row_major_is_not_recorded_contiguous(make: Any) -> None:
    out = make()
    values = out.unbind(0)
    book = ColumnLayouts()
    columns_module._record(book, values)
    record = book.common(values)
    assert record is not None and record.contiguous is None
    column = _column(list(values))
    asked = _allocate(column, list(values), book)
    assert asked == [False]
    _same_as_allocate_like(column.storages, list(values), TensorKind.ATTRIBUTE)
    assert all(s.stride() == row_major(s.shape) for s in column.storages)


def test_a_row_major_result_is_recorded_contiguous_and_swept() -> None:
    values = (torch.rand(6, 2, 3) * 2).unbind(0)
    book = ColumnLayouts()
    columns_module._record(book, values)
    record = book.common(values)
    assert record is not None and record.contiguous is True
    column = _column(list(values))
    assert _allocate(column, list(values), book) == [True]
    _same_as_allocate_like(column.storages, list(values), TensorKind.ATTRIBUTE)


@pytest.mark.parametrize("make, swept", [
    (lambda: torch.full((2, 3), 7), True),
    (lambda: torch.empty_strided((1, 3), (100, 1)).fill_(7), False),  # size-1 dim, odd stride
    (lambda: torch.rand(3, 2).t(), False),
], ids=["row_major", "size1_odd_stride", "transposed"])
def test_one_shared_object_has_its_strides_read_once(make: Any, swept: bool) -> None:
    shared = make()
    values = [shared] * 5
    column = _column(values)
    assert _allocate(column, values, ColumnLayouts()) == [swept]
    _same_as_allocate_like(column.storages, values, TensorKind.ATTRIBUTE)


def test_distinct_objects_without_a_proof_take_allocate_like() -> None:
    values = [torch.rand(2, 3) for _ in range(4)]  # row-major, but nothing proved it
    column = _column(values)
    assert _allocate(column, values, ColumnLayouts()) == [False]
    _same_as_allocate_like(column.storages, values, TensorKind.ATTRIBUTE)


def test_the_stamped_compile_sweeps_every_allocated_column(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, bool]] = []
    made: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = []

    def spy(real: Any) -> Any:
        def made_by(values: list[torch.Tensor], kind: TensorKind,
                    row_major: bool = False) -> Any:
            asked.append((real.__name__, row_major))
            got = real(values, kind, row_major)
            made.append((list(values), got))
            return got
        return made_by

    monkeypatch.setattr(planner_module, "filled_column", spy(adoption.filled_column))
    monkeypatch.setattr(planner_module, "allocate_column", spy(adoption.allocate_column))
    with stamping(True):
        plan = planner_module.compile_plan(_model(), [scaling_spec()])
    assert asked and all(row_major for _, row_major in asked)
    assert len(asked) == sum(type(c) is EntryColumn for c in plan.entries.columns) == 3
    # the source-free column is made filled (the sweep), the two the pass writes unfilled
    assert sorted(name for name, _ in asked) == ["allocate_column", "allocate_column",
                                                 "filled_column"]
    for values, got in made:
        want = [allocate_like(v, TensorKind.ATTRIBUTE) for v in values]
        assert [_facts(t) for t in got] == [_facts(t) for t in want]


def test_a_later_value_with_other_strides_takes_allocate_like() -> None:
    values = [torch.rand(2, 3), torch.rand(3, 2).t(), torch.rand(2, 3)]  # one layout record
    column = _column(values)
    assert _allocate(column, values, ColumnLayouts()) == [False]
    _same_as_allocate_like(column.storages, values, TensorKind.ATTRIBUTE)
    assert all(s.stride() == (3, 1) for s in column.storages)
