"""The column proof's stride read (:func:`~derivgraph.column_layout.tensor_method`): the
unbound ``torch.Tensor.stride`` for plain tensors and parameters, each tensor's own
``stride()`` for any other class, so a sweep's answer is :func:`reads.layout`'s."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from derivgraph.column_layout import tensor_method
from derivgraph.compiler.reads import layout
from derivgraph.compiler.stamp_columns import _all_layout, _layout_ok


class Lying(torch.Tensor):
    """A subclass whose ``stride()`` is its own."""

    def stride(self, *args: Any) -> Any:  # type: ignore[override]
        return (99,)


def test_plain_tensors_and_parameters_read_the_unbound_stride() -> None:
    read = tensor_method((torch.Tensor, nn.Parameter), "stride")
    assert read is torch.Tensor.stride
    t = torch.ones(2, 3)
    p = nn.Parameter(torch.ones(2, 3).t(), requires_grad=False)
    assert read(t) == t.stride() == (3, 1)
    assert read(p) == p.stride() == (1, 3)


def test_a_subclass_with_its_own_stride_is_read_by_its_own() -> None:
    """Canary: the unbound read would say (1,), the class says (99,) (what reads.layout
    records and the row rule compares)."""
    got = [torch.ones(3).as_subclass(Lying) for _ in range(4)]
    _, shape, stride, dtype, device = layout(got[0])
    assert stride == (99,)
    assert tensor_method((Lying,), "stride")(got[0]) == (99,)
    assert _all_layout(got, shape, stride, dtype, device)
    assert not _all_layout(got, shape, (1,), dtype, device)
    assert _layout_ok(got, shape, stride, dtype, device) == [True] * 4


def test_the_sweep_and_the_fields_agree_on_plain_columns() -> None:
    got = [torch.ones(2, 3), torch.ones(2, 3), torch.ones(3, 2).t()]
    _, shape, stride, dtype, device = layout(got[0])
    assert not _all_layout(got, shape, stride, dtype, device)
    assert _layout_ok(got, shape, stride, dtype, device) == [True, True, False]


def test_one_class_of_its_own_among_plain_ones_reads_each_tensors_own() -> None:
    """Canary: a mixed set of classes (one with its own ``stride``) is not read unbound."""
    read = tensor_method((torch.Tensor, Lying), "stride")
    assert read(torch.ones(3).as_subclass(Lying)) == (99,)
    assert read(torch.ones(2, 3)) == (3, 1)
