""":func:`derivgraph.compiler.flat.span_of`: the memory from the lowest to the highest element.

The span is read in C-level sweeps (one per property) with one extent per layout; its bounds
are asserted against each tensor's own ``data_ptr``, shape and strides computed by hand, for a
column of one layout, for mixed layouts, and for the tensors it must refuse.
"""

from __future__ import annotations

import pytest
import torch

from derivgraph.compiler.flat import span_of


def _bounds(tensors: list[torch.Tensor]) -> tuple[int, int]:
    """(lowest byte, one past the highest byte) of ``tensors``, tensor by tensor."""
    lows, highs = [], []
    for t in tensors:
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
        lows.append(t.data_ptr())
        highs.append(t.data_ptr() + (last + 1) * t.element_size())
    return min(lows), max(highs)


def _cases() -> dict[str, list[torch.Tensor]]:
    base = torch.zeros(4096)
    grid = torch.zeros(16, 16)
    return {
        "one-layout column": [base[i * 8:(i + 1) * 8] for i in range(0, 400, 3)],
        "separate allocations": [torch.arange(8.0) + i for i in range(40)],
        "mixed layouts": [grid.t()[2:5], base[100:103], grid[3:9:2, 1:4], base[7:8]],
        "one tensor": [grid[5]],
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_the_span_covers_every_element_and_nothing_past_them(name: str) -> None:
    tensors = _cases()[name]
    span = span_of(tensors)
    assert span is not None
    low, high = _bounds(tensors)
    assert (span.low, span.itemsize) == (low, 4)
    assert span.view.data_ptr() == low and span.view.numel() * 4 == high - low
    for t in tensors:  # every element read through the span is the tensor's own
        assert torch.equal(span.view[span.index([t])].view(t.shape), t)


@pytest.mark.parametrize("make", [
    lambda: [torch.zeros(8), torch.zeros(8, dtype=torch.float64)],
    lambda: [torch.zeros(8), torch.zeros(0)],
    lambda: [torch.zeros(8), torch.zeros(8, device="meta")],
    lambda: [],
], ids=["two-dtypes", "an-empty-tensor", "meta-among-cpu", "none"])
def test_what_no_span_covers(make) -> None:  # type: ignore[no-untyped-def]
    assert span_of(make()) is None


def test_a_tensor_off_the_element_grid_has_no_span() -> None:
    memory = bytearray(64)
    on = torch.frombuffer(memory, dtype=torch.float32, count=2, offset=8)
    off = torch.frombuffer(memory, dtype=torch.float32, count=2, offset=1)
    also_on = torch.frombuffer(memory, dtype=torch.float32, count=2, offset=20)
    assert span_of([on, off]) is None
    span = span_of([also_on, on])
    assert span is not None and span.low == on.data_ptr()
    assert span.view.numel() == (also_on.data_ptr() - on.data_ptr()) // 4 + 2
