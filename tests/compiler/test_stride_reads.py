"""The column proof's stride read (:func:`~derivgraph.compiler.stamp_columns._strides`): the
unbound ``torch.Tensor.stride`` for plain tensors and parameters, each tensor's own
``stride()`` for any other class, so a sweep's answer is :func:`reads.layout`'s."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from derivgraph.compiler.reads import layout
from derivgraph.compiler.stamp_columns import _all_layout, _layout_ok, _strides


class Lying(torch.Tensor):
    """A subclass whose ``stride()`` is its own."""

    def stride(self, *args: Any) -> Any:  # type: ignore[override]
        return (99,)


def test_plain_tensors_and_parameters_read_the_unbound_stride() -> None:
    assert _strides(torch.Tensor) is torch.Tensor.stride
    assert _strides(nn.Parameter) is torch.Tensor.stride
    t = torch.ones(2, 3)
    p = nn.Parameter(torch.ones(2, 3).t(), requires_grad=False)
    assert _strides(torch.Tensor)(t) == t.stride() == (3, 1)
    assert _strides(nn.Parameter)(p) == p.stride() == (1, 3)


def test_a_subclass_with_its_own_stride_is_read_by_its_own() -> None:
    """Canary: the unbound read would say (1,), the class says (99,) (what reads.layout
    records and the row rule compares)."""
    got = [torch.ones(3).as_subclass(Lying) for _ in range(4)]
    _, shape, stride, dtype, device = layout(got[0])
    assert stride == (99,)
    read = _strides(Lying)
    assert _all_layout(got, shape, stride, dtype, device, read)
    assert not _all_layout(got, shape, (1,), dtype, device, read)
    assert _layout_ok(got, shape, stride, dtype, device, read) == [True] * 4


def test_the_sweep_and_the_fields_agree_on_plain_columns() -> None:
    got = [torch.ones(2, 3), torch.ones(2, 3), torch.ones(3, 2).t()]
    _, shape, stride, dtype, device = layout(got[0])
    read = _strides(torch.Tensor)
    assert not _all_layout(got, shape, stride, dtype, device, read)
    assert _layout_ok(got, shape, stride, dtype, device, read) == [True, True, False]
