"""A column listed after its template (:meth:`derivgraph.column_layout.ColumnLayouts.common`):
the compact emission asks the book about ``[template, *rows]``, the template admitted apart
from its recorded rows. The book answers it from the template's record and the column's (one
identity sweep) exactly as it answers from every tensor's record (:func:`one_layout` of
:meth:`~derivgraph.column_layout.ColumnLayouts.of`): each case against that reference."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.column_layout import ColumnLayout, ColumnLayouts, one_layout


def _record(dtype: torch.dtype = torch.float32, contiguous: bool | None = True) -> ColumnLayout:
    return ColumnLayout(torch.Tensor, dtype, torch.Size([4]), torch.device("cpu"), contiguous)


def _book() -> tuple[ColumnLayouts, list[torch.Tensor], ColumnLayout]:
    rows = [torch.zeros(4) for _ in range(6)]
    layout = _record()
    book = ColumnLayouts()
    book.add(rows, layout)
    return book, rows, layout


def _reference(book: ColumnLayouts, tensors: list[Any]) -> ColumnLayout | None:
    return one_layout(book.of(tensors))


def _admitted(book: ColumnLayouts, record: ColumnLayout) -> torch.Tensor:
    head = torch.zeros(4, dtype=record.dtype)
    assert book.admit(head, record)
    return head


@pytest.mark.parametrize("case", ["same record", "equal facts", "other facts",
                                  "not contiguous proved"])
def test_a_template_before_its_column_answers_as_every_record(case: str) -> None:
    book, rows, layout = _book()
    record = {"same record": layout, "equal facts": _record(),
              "other facts": _record(torch.float64),
              "not contiguous proved": _record(contiguous=None)}[case]
    head = _admitted(book, record)
    tensors = [head, *rows]
    got = book.common(tensors)
    assert got is _reference(book, tensors)
    want = {"same record": layout, "equal facts": record, "other facts": None,
            "not contiguous proved": None}[case]
    assert got is want


def test_a_column_not_in_its_order_or_not_whole_is_read_tensor_by_tensor() -> None:
    book, rows, layout = _book()
    other = _admitted(book, _record(torch.float64))
    head = _admitted(book, _record())
    for tensors in ([head, *rows[::-1]], [head, *rows[:-1]], [head, *rows, rows[0]],
                    [other, *rows[::-1]], [head, rows[0]], [head, torch.zeros(4), *rows[1:]]):
        assert book.common(tensors) is _reference(book, tensors)
    stranger = torch.zeros(4)  # not held: none
    assert book.common([stranger, *rows]) is None
    # the column's first where it starts, the length the column's: a stranger in it is seen
    tensors = [head, *rows[:-1], stranger]
    assert book.common(tensors) is _reference(book, tensors) is None
    assert book.common([head]) is _reference(book, [head])


def test_two_recorded_columns_back_to_back_are_not_taken_for_a_template() -> None:
    """The first tensor is a recorded column's first: the head path still answers as the
    reference (the second column after the first's first tensor)."""
    book, rows, layout = _book()
    more = [torch.zeros(4, dtype=torch.float64) for _ in range(3)]
    book.add(more, _record(torch.float64))
    tensors = [rows[0], *more]
    assert book.common(tensors) is _reference(book, tensors) is None
    same = [torch.zeros(4) for _ in range(3)]
    book.add(same, _record())
    tensors = [rows[0], *same]
    assert book.common(tensors) is _reference(book, tensors) is layout
