"""A refill's copies of many small CPU tensors as one ``cat`` and one row assignment.

On CPU ``torch._foreach_copy_`` is a loop of one aten copy per tensor, and a DeepSeek-scale
refill copies hundreds of tiny engine tensors (per-layer scales, strides). The engine's fresh
tensors are new objects at new addresses every reload, but the startup storage they are copied
into is fixed: :class:`FlatCopy` concatenates the fresh tensors of a run of contiguous targets
of one dtype and one shape into a preallocated buffer (``torch.cat(out=)``: one op, any
strides), then writes each target's bytes at its startup address with one NumPy row assignment
over the memory that holds the targets (:class:`derivgraph.compiler.flat.Span`; the rows are a
view of that memory with a row at every byte, one start per target: an index of one word per
target, where an element index (``scatter_``) read one word per element and cost ~2x cold).
Bit for bit a copy (bytes). Only where the caller proved every fresh tensor has its target's
dtype and shape (the refill's layout check) and every target is at its startup address (the
refill restores startup storage first); the addresses are those of the storages held here, and
no two targets overlap (checked here: then the rows written are disjoint).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate, groupby
from typing import Any

import numpy as np
import torch

from derivgraph.column_layout import ColumnLayout, one_layout, tensor_method
from derivgraph.compiler import flat

__all__ = ["FlatCopy", "flat_runs", "key_runs", "layout_runs"]


class FlatCopy:
    """``ours[i].copy_(theirs[i])`` for a fixed list ``ours`` of contiguous CPU tensors of one
    dtype and one shape (ndim >= 1, no two overlapping), as ``cat`` + one NumPy row assignment
    of their bytes (``rows[starts] = src``). ``span``: :func:`~derivgraph.compiler.flat.span_of`
    (or ``span_of_run``) of ``ours``, whose addresses it keeps. ``held``: an object per
    tensor that keeps the memory at its span address alive (the startup record's, where the
    span is made of the startup addresses), else each tensor's ``untyped_storage()``."""

    __slots__ = ("held", "rows", "starts", "buf", "src")

    def __init__(self, ours: Sequence[torch.Tensor], span: flat.Span,
                 held: Sequence[Any] | None = None):
        first = ours[0]
        # every address below stays valid (one C call per tensor of a plain class)
        self.held = list(held) if held is not None else list(
            map(tensor_method(set(map(type, ours)), "untyped_storage"), ours))
        size = first.numel() * first.element_size()
        memory = span.view.view(torch.uint8).numpy()  # the bytes from the lowest target on
        # a row of ``size`` bytes at every byte: target i is row starts[i] (written, never read)
        self.rows = np.lib.stride_tricks.as_strided(
            memory, shape=(memory.size - size + 1, size), strides=(1, 1), writeable=True)
        self.starts = np.array(span.starts, dtype=np.intp)  # the span was made from ``ours``
        self.starts -= span.low
        self.buf = torch.empty((len(ours) * first.shape[0], *first.shape[1:]),
                               dtype=first.dtype)
        self.src = self.buf.view(-1).view(torch.uint8).numpy().reshape(len(ours), size)

    def copy(self, theirs: Sequence[torch.Tensor]) -> None:
        torch.cat(theirs, 0, out=self.buf)
        self.rows[self.starts] = self.src


def _flat_copy(ours: Sequence[torch.Tensor],
               records: Sequence[ColumnLayout | None] | None = None,
               ptrs: list[int] | None = None,
               held: Sequence[Any] | None = None) -> FlatCopy | None:
    """A :class:`FlatCopy` over ``ours``, None where one cannot copy them exactly (a target not
    contiguous, or two overlapping: foreach order). ``records``: each target's layout record
    (:mod:`~derivgraph.column_layout`); where they give every target one CPU layout of
    a plain dtype with row-major strides, only the addresses are read (``ptrs``: those
    addresses, where the caller proved them: then none is read; ``held``: with them, what
    keeps each one's memory alive, see :class:`FlatCopy`)."""
    known = _one_layout(records)
    if known is not None:
        span = flat.span_of_run(ours, known.dtype, known.shape, ptrs)
    elif not all(map(tensor_method(set(map(type, ours)), "is_contiguous"), ours)):
        return None
    else:
        span = flat.span_of(ours)
    if span is None:
        return None
    # the holders only where the span is of the proven addresses they keep alive
    copy = FlatCopy(ours, span, held if known is not None and ptrs is not None
                    and len(ptrs) == len(ours) else None)
    if not flat.disjoint(copy.starts, copy.src.shape[1]):  # overlapping targets
        return None
    return copy


def _one_layout(records: Sequence[ColumnLayout | None] | None) -> ColumnLayout | None:
    """The layout every record of ``records`` gives, where all do (each a record) and it is
    a CPU tensor's of a plain dtype (:data:`~derivgraph.compiler.flat.COPY_DTYPES`) with
    row-major strides (``contiguous``: True); None otherwise."""
    first = one_layout(records) if records else None
    if first is None or first.contiguous is not True or first.device.type != "cpu" \
            or first.dtype not in flat.COPY_DTYPES:
        return None
    return first


def key_runs(keys: Sequence[Any], by: Callable[[Any], Any] | None = None,
             ) -> list[tuple[int, int]]:
    """``[start, end)`` of each maximal run of equal ``by(key)`` (default: the key) in ``keys``."""
    cuts = [0, *accumulate(sum(1 for _ in run) for _, run in groupby(keys, by))]
    return list(zip(cuts, cuts[1:]))


def layout_runs(ours: Sequence[torch.Tensor]) -> list[tuple[int, int]]:
    """``[start, end)`` of each maximal run of ``ours`` of one dtype, device and shape."""
    return key_runs([(t.dtype, t.device, t.shape) for t in ours])


def flat_runs(ours: Sequence[torch.Tensor], layouts: Sequence[tuple[int, int]] | None = None,
              records: Sequence[ColumnLayout | None] | None = None,
              ptrs: list[int] | None = None,
              held: Sequence[Any] | None = None) -> list[tuple[int, int, FlatCopy]]:
    """``(start, end, copy)`` for the runs of ``ours`` (sorted so that equal layouts are
    adjacent) that take the flat copy: CPU, a plain dtype, one shape of ndim >= 1 and at most
    :data:`~derivgraph.compiler.flat.MAX_MEAN` elements, at least
    :data:`~derivgraph.compiler.flat.MIN_GROUP` tensors, each run at most
    :data:`~derivgraph.compiler.flat.MAX_ELEMENTS` elements (aten's grain size: one thread).
    ``layouts``: :func:`layout_runs` of ``ours`` where the caller knows them already;
    ``records``: each tensor's layout record, where the caller has them; ``ptrs``: each
    tensor's ``data_ptr()``, where the caller proved them; ``held``: with ``ptrs``, an
    object per tensor that keeps the memory at that address alive (see :func:`_flat_copy`)."""
    runs: list[tuple[int, int, FlatCopy]] = []
    for start, end in layout_runs(ours) if layouts is None else layouts:
        first = ours[start]
        numel = first.numel()
        if first.device.type == "cpu" and first.dtype in flat.COPY_DTYPES and first.dim() >= 1 \
                and 0 < numel <= flat.MAX_MEAN:
            step = max(flat.MAX_ELEMENTS // numel, 1)
            for a in range(start, end, step):
                b = min(a + step, end)
                copy = _flat_copy(ours[a:b], None if records is None else records[a:b],
                                  None if ptrs is None else ptrs[a:b],
                                  None if held is None or ptrs is None else held[a:b]) \
                    if b - a >= flat.MIN_GROUP else None
                if copy is not None:
                    runs.append((a, b, copy))
    return runs
