"""An entry column whose values are proven plain row-major tensors on the CPU gets storages
that already hold its values (``adoption.filled_column``: ``torch.clone`` of each, that is
``empty_like``'s storage and then the copy the compile's fill would make), so its rows are not
handed to the fill copy (a GPU's fill copy stays one fused launch). Asserted against
``allocate_like`` and a copy, row by row (type, dtype, shape, strides, offset, device, grad, a
fresh storage of its own, the bits), and on the column's ``allocate`` (nothing appended to the
fills). Canaries: the sweep taken for kind parameter, without the proof or off the CPU;
storages that are not filled; the values themselves handed back; the rows appended to the
fills as well.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph.adoption import allocate_column, allocate_like, filled_column
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.spec.kinds import TensorKind
from tests.compiler.test_column_allocation import _column, _facts

KINDS = [TensorKind.ATTRIBUTE, TensorKind.BUFFER, TensorKind.PARAMETER]
VALUES = {
    "rows": lambda: list(torch.rand(5, 2, 3).unbind(0)),
    "size1": lambda: [torch.rand(1, 4) for _ in range(3)],
    "empty": lambda: [torch.rand(0, 3) for _ in range(2)],
    "ints": lambda: [torch.arange(6).reshape(2, 3) + i for i in range(3)],
    "scalars": lambda: list(torch.rand(4).unbind(0)),
}


def _fresh(got: list[torch.Tensor], values: list[torch.Tensor]) -> bool:
    if not got or not got[0].numel():
        return all(t is not v for t, v in zip(got, values))
    ptrs = {t.untyped_storage().data_ptr() for t in got}
    return len(ptrs) == len(got) and not ptrs & {v.untyped_storage().data_ptr() for v in values}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(VALUES))
def test_the_filled_storages_are_allocate_like_s_holding_the_values(
        name: str, kind: TensorKind) -> None:
    values = VALUES[name]()
    got = filled_column(values, kind, True)
    if kind is TensorKind.PARAMETER:
        assert got is None  # allocate_column's per-value path: the caller fills
        return
    assert got is not None
    want = [allocate_like(v, kind) for v in values]
    assert [_facts(t) for t in got] == [_facts(t) for t in want]
    assert [_facts(t) for t in got] == [_facts(t) for t in allocate_column(values, kind, True)]
    assert all(torch.equal(t, v) and t.dtype == v.dtype for t, v in zip(got, values))
    assert _fresh(got, values)


@pytest.mark.parametrize("kind", KINDS)
def test_without_a_row_major_proof_nothing_is_filled(kind: TensorKind) -> None:
    assert filled_column(VALUES["rows"](), kind, False) is None


@pytest.mark.parametrize("kind", KINDS)
def test_off_the_cpu_or_without_values_nothing_is_filled(kind: TensorKind) -> None:
    """Off the CPU the fill copy stays one fused ``_foreach_copy_`` (a GPU's launches)."""
    assert filled_column(list(torch.empty(3, 2, device="meta").unbind(0)), kind, True) is None
    assert filled_column([], kind, True) is None


def test_a_filled_column_hands_nothing_to_the_fill_copy() -> None:
    values = VALUES["rows"]()  # one result unbound: row-major, recorded so by its maker
    book = ColumnLayouts()
    book.add(values, ColumnLayout(torch.Tensor, values[0].dtype, values[0].shape,
                                  values[0].device, True))
    column = _column(values)
    fills: list[Any] = []
    column.allocate(values, fills, allocate_column, book, filled_column)
    assert fills == [] and all(map(torch.equal, column.storages, values))
    assert [e.storage for e in column.entries] == column.storages
    other = [torch.rand(3, 2).t() for _ in range(3)]  # not row-major: allocated, then filled
    column = _column(other)
    column.allocate(other, fills, allocate_column, ColumnLayouts(), filled_column)
    assert [(s, v) for s, v in fills] == list(zip(column.storages, other))
