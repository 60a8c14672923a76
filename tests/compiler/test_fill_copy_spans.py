"""The compile's fill copy takes its (dtype, device) spans from the layout book
(``planner._copy_spans``): where the book holds every new storage, the spans are the maximal
runs :func:`~derivgraph.runtime.engine.layout_spans` reads tensor by tensor; where it holds
one not, None (``foreach_copy`` groups them itself). Canaries: adjacent runs of one dtype not
joined; every tensor taken as one span; an unheld tensor taken as held.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import planner
from derivgraph.column_layout import ColumnLayout, ColumnLayouts, column_layout
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.engine import layout_spans
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _book(*columns: list[torch.Tensor]) -> ColumnLayouts:
    book = ColumnLayouts()
    for tensors in columns:
        layout = column_layout(tensors)
        assert layout is not None
        book.add(tensors, layout)
    return book


def _column(n: int, dtype: torch.dtype, shape: tuple[int, ...] = (3,)) -> list[torch.Tensor]:
    return [torch.zeros(shape, dtype=dtype) for _ in range(n)]


@pytest.mark.parametrize("dtypes", [
    [torch.float32],
    [torch.float32, torch.float32],  # two records, one dtype: one span
    [torch.float32, torch.int64],
    [torch.float32, torch.float32, torch.int64, torch.float32],
    [torch.int64, torch.float16, torch.int64],
])
def test_the_spans_are_the_tensor_by_tensor_runs(dtypes: list[torch.dtype]) -> None:
    columns = [_column(2 + i, dtype, (i + 1,)) for i, dtype in enumerate(dtypes)]
    tensors = [t for c in columns for t in c]
    assert planner._copy_spans(tensors, _book(*columns)) == layout_spans(tensors)


def test_one_tensor_the_book_does_not_hold_leaves_the_grouping_to_foreach_copy() -> None:
    held = _column(3, torch.float32)
    book = _book(held)
    assert planner._copy_spans([*held, torch.zeros(3)], book) is None
    assert planner._copy_spans([], book) is None
    book.admit(extra := torch.zeros(3), next(iter(set(book.of(held)))))  # a template joins
    assert planner._copy_spans([*held, extra], book) == [(0, 4)]


def test_a_record_is_read_not_the_tensors() -> None:
    """The record answers (its dtype), proved where the tensors were made."""
    tensors = _column(3, torch.float32)
    book = ColumnLayouts()
    book.add(tensors, ColumnLayout(torch.Tensor, torch.float32, torch.Size([3]),
                                   torch.device("cpu"), True))
    book.add(more := _column(2, torch.float32), ColumnLayout(
        torch.Tensor, torch.int64, torch.Size([3]), torch.device("cpu"), True))
    assert planner._copy_spans([*tensors, *more], book) == [(0, 3), (3, 5)]


def test_a_stamped_compile_copies_its_fills_in_the_runs_read_one_by_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    copy = planner.foreach_copy

    def spy(ours: list[torch.Tensor], theirs: list[torch.Tensor], spans: Any = None) -> None:
        seen.append((list(ours), spans))
        copy(ours, theirs, spans)

    monkeypatch.setattr(planner, "foreach_copy", spy)
    with stamping(True):
        plan = planner.compile_plan(scaling_model(12), [scaling_spec()])
    (ours, spans), = seen
    assert len(spans) > 1 and spans == layout_spans(ours)
    assert len(ours) == len({id(t) for t in ours}) >= 3  # the templates' (a column's: filled)
    stored = {id(t) for column in plan.entries.columns for t in column.storages}
    assert not any(id(t) in stored for t in ours)
