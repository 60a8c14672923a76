"""A refill's copies of many small CPU tensors as one ``cat`` and one ``scatter_``.

On CPU ``torch._foreach_copy_`` is a loop of one aten copy per tensor, and a DeepSeek-scale
refill copies hundreds of tiny engine tensors (per-layer scales, strides). The engine's fresh
tensors are new objects at new addresses every reload, but the startup storage they are copied
into is fixed: :class:`FlatCopy` concatenates the fresh tensors of a run of targets of one
dtype and one shape into a preallocated buffer (``torch.cat(out=)``: one op, any strides), then
writes every element at its startup address with one ``scatter_`` over the memory that holds
the targets (:class:`derivgraph.compiler.flat.Span`, addresses computed once). Bit for bit a
copy. Only where the caller proved every fresh tensor has its target's dtype and shape (the
refill's layout check) and every target is at its startup address (the refill restores startup
storage first); the addresses are those of the storages held here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from derivgraph.compiler import flat

__all__ = ["FlatCopy", "flat_runs"]


class FlatCopy:
    """``ours[i].copy_(theirs[i])`` for a fixed list ``ours`` of CPU tensors of one dtype and
    one shape (ndim >= 1, no two overlapping), as ``cat`` + ``scatter_`` (for 32,768 elements
    ``index_copy_`` measured ~8x slower than ``scatter_`` here: no overlap, so the same writes)."""

    __slots__ = ("held", "out", "at", "buf")

    def __init__(self, ours: Sequence[torch.Tensor], span: flat.Span):
        first = ours[0]
        self.held = [t.untyped_storage() for t in ours]  # every address below stays valid
        self.out = span.view
        self.at = span.index(ours)
        self.buf = torch.empty((len(ours) * first.shape[0], *first.shape[1:]),
                               dtype=first.dtype)

    def copy(self, theirs: Sequence[torch.Tensor]) -> None:
        torch.cat(theirs, 0, out=self.buf)
        self.out.scatter_(0, self.at, self.buf.view(-1))


def _flat_copy(ours: Sequence[torch.Tensor]) -> FlatCopy | None:
    """A :class:`FlatCopy` over ``ours``, None where one cannot copy them exactly."""
    span = flat.span_of(ours)
    if span is None:
        return None
    copy = FlatCopy(ours, span)
    at = np.sort(copy.at.numpy())  # one NumPy sort: torch's unique costs ~6x (and more cold)
    if (at[1:] == at[:-1]).any():  # overlapping targets: foreach order
        return None
    return copy


def flat_runs(ours: Sequence[torch.Tensor]) -> list[tuple[int, int, FlatCopy]]:
    """``(start, end, copy)`` for the runs of ``ours`` (sorted so that equal layouts are
    adjacent) that take the flat copy: CPU, a plain dtype, one shape of ndim >= 1 and at most
    :data:`~derivgraph.compiler.flat.MAX_MEAN` elements, at least
    :data:`~derivgraph.compiler.flat.MIN_GROUP` tensors, each run at most
    :data:`~derivgraph.compiler.flat.MAX_ELEMENTS` elements (aten's grain size: one thread)."""
    runs: list[tuple[int, int, FlatCopy]] = []
    start = 0
    while start < len(ours):
        first = ours[start]
        end = start + 1
        while end < len(ours) and ours[end].dtype == first.dtype \
                and ours[end].device == first.device and ours[end].shape == first.shape:
            end += 1
        numel = first.numel()
        if first.device.type == "cpu" and first.dtype in flat.COPY_DTYPES and first.dim() >= 1 \
                and 0 < numel <= flat.MAX_MEAN:
            step = max(flat.MAX_ELEMENTS // numel, 1)
            for a in range(start, end, step):
                b = min(a + step, end)
                copy = _flat_copy(ours[a:b]) if b - a >= flat.MIN_GROUP else None
                if copy is not None:
                    runs.append((a, b, copy))
        start = end
    return runs
