"""A foreach group of many small CPU tensors as a few whole-buffer ops, addressed by memory.

On CPU a ``torch._foreach_*`` call is a loop of one aten op per tensor (no fused kernel), so a
group of hundreds of tiny derived tensors costs hundreds of op dispatches per call, and a
grouped step is two calls (copy, then the op in place). The outputs cannot be moved into one
buffer: they are adopted engine tensors at their own addresses, the addresses a captured graph
reads. Instead, :func:`emit` addresses them where they are: the memory range that holds every
tensor of the group is seen as one flat tensor of the group's dtype (:class:`Span`, a view over
that range, no copy), and the group runs as

* one ``index_select`` per operand list into a preallocated buffer (the elements of every
  operand, broadcast to its output's shape, in order),
* the op once on the buffers, bit for bit the op each tensor would run (only exact IEEE ops:
  ``+ - * /``, ``reciprocal``, ``sqrt``, ``abs``, ``neg``, ``maximum``, ``minimum``),
* one ``index_copy_`` that writes every element of every output at its startup address.

The element indices are computed once, at compile, from each tensor's ``data_ptr`` and
strides; they hold while every tensor the group reads or writes is at that address, which the
plan checks before each pass (startup storage restored under re-pointed tensors, sources
checked by identity and address, the pass recompiled when a source moved). The buffers and
spans are bound globals of the generated code: the printed pass is the pass, and nothing is
allocated when it runs. Used only for CPU tensors of one plain dtype whose outputs are
contiguous, and only where the group is many (:data:`MIN_GROUP`) small tensors (mean size
:data:`MAX_MEAN` or less: above it the per-tensor loop is memcpy-bound, not dispatch-bound) of at
most :data:`MAX_ELEMENTS` elements in all (:func:`fits`); a group over that limit alone runs as
consecutive chunks of its members (:func:`chunks`), each taking the flat path by the same rule.

The eager pass only: :meth:`derivgraph.runtime.plan.Plan.capture` records the pass with one
``torch._foreach_*`` call per operation (a recording addresses each storage it writes, which the
capture's write check reads).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

import numpy as np
import torch

from derivgraph.column_layout import row_major

__all__ = ["EXACT_BINARY", "EXACT_UNARY", "MAX_ELEMENTS", "MAX_MEAN", "MIN_GROUP", "OP_DTYPES",
           "Span", "chunks", "disjoint", "fits", "span_of", "span_of_run"]

#: the largest mean number of elements per tensor of a group that takes the flat path
MAX_MEAN = 1024
#: the fewest tensors of a group that takes the flat path (below, the dispatches saved are few)
MIN_GROUP = 32
#: the most elements of a group that takes the flat path: aten's grain size, above which its CPU
#: ops split across threads (measured: slower than the per-tensor loop on a loaded 2-core host)
MAX_ELEMENTS = 32768
#: ops whose result is the same bits on one element or a vector of them (IEEE exact)
EXACT_UNARY = frozenset({"reciprocal", "abs", "neg", "sqrt"})
EXACT_BINARY = frozenset({"add", "sub", "mul", "div", "maximum", "minimum"})
#: dtypes an op (not only a copy) runs on in the flat path
OP_DTYPES = frozenset({torch.float32, torch.float64})
#: dtypes a plain copy runs on in the flat path (any element is copied bit for bit)
COPY_DTYPES = OP_DTYPES | frozenset({torch.float16, torch.bfloat16, torch.int8, torch.uint8,
                                     torch.int16, torch.int32, torch.int64, torch.bool})


def fits(total: int, n: int) -> bool:
    """The flat path's size rule: a group of ``n`` tensors of ``total`` elements in all takes it
    when they are at least :data:`MIN_GROUP`, of mean size at most :data:`MAX_MEAN`, and at most
    :data:`MAX_ELEMENTS` together."""
    return n >= MIN_GROUP and total <= min(MAX_MEAN * n, MAX_ELEMENTS)


def chunks(numels: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, end)`` of consecutive runs covering a group's members in order (``numels``:
    each member's number of elements), each the longest from its start holding at most
    :data:`MAX_ELEMENTS` elements (a member above it alone): the pieces of a group too large
    for the flat path, each then put to :func:`fits` like any group."""
    ends = np.cumsum(np.asarray(numels, dtype=np.int64))
    cuts: list[tuple[int, int]] = []
    start, done = 0, 0
    while start < len(ends):
        end = max(int(np.searchsorted(ends, done + MAX_ELEMENTS, side="right")), start + 1)
        cuts.append((start, end))
        start, done = end, int(ends[end - 1])
    return cuts


@dataclass(frozen=True)
class Span:
    """The memory from the lowest to the highest element of a set of tensors, as one 1-D tensor
    of their dtype (``view``), and each tensor's first element in it."""

    view: torch.Tensor
    low: int
    itemsize: int
    #: each tensor's data address, in the order the span was made from (read once, here)
    starts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False,
                               compare=False)

    def index(self, tensors: Sequence[torch.Tensor],
              shapes: Sequence[torch.Size] | None = None) -> torch.Tensor:
        """The position in :attr:`view` of every element of ``tensors`` in row-major order,
        each tensor broadcast to ``shapes[i]`` when given (int64, made once). Tensors of one
        shape and stride (broadcast to one shape) take one sweep over their addresses."""
        layouts = set(zip(map(_shape, tensors), map(_stride, tensors)))
        targets = None if shapes is None else set(shapes)
        if len(layouts) == 1 and (targets is None or len(targets) == 1):
            (shape, stride), = layouts
            return self._sweep(np.fromiter(map(_ptr, tensors), np.int64, len(tensors)),
                               _offsets(shape, stride, shape if targets is None else
                                        targets.pop()))
        parts = []
        for i, t in enumerate(tensors):
            start = (t.data_ptr() - self.low) // self.itemsize
            parts.append(start + _offsets(t.shape, t.stride(),
                                          t.shape if shapes is None else shapes[i]))
        return torch.cat(parts)

    def index_run(self, start: int, stop: int, shape: torch.Size,
                  to: torch.Size | None = None) -> torch.Tensor:
        """:meth:`index` of the span's own tensors ``[start, stop)`` (:attr:`starts`), which
        the caller proved of ``shape`` and its row-major strides, broadcast to ``to``: only
        their addresses, read when the span was made."""
        return self._sweep(self.starts[start:stop],
                           _offsets(shape, row_major(shape), shape if to is None else to))

    def _sweep(self, addresses: np.ndarray, offsets: torch.Tensor) -> torch.Tensor:
        """Each tensor's first element (from its data address) plus ``offsets``, in order."""
        first = (addresses - self.low) // self.itemsize
        return torch.from_numpy((first[:, None] + offsets.numpy()[None, :]).reshape(-1))


def _offsets(shape: torch.Size, stride: tuple[int, ...], to: torch.Size) -> torch.Tensor:
    """The elements of a tensor of ``shape`` and ``stride``, broadcast to ``to``, in row-major
    order, as element offsets from its first (int64)."""
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    return torch.arange(extent, dtype=torch.int64).as_strided(shape, stride).expand(to) \
        .reshape(-1)


_QUANTIZED, _SPARSE = attrgetter("is_quantized"), attrgetter("is_sparse")
_shape, _dtype, _device = attrgetter("shape"), attrgetter("dtype"), attrgetter("device")
_numel, _stride, _ptr = torch.Tensor.numel, torch.Tensor.stride, torch.Tensor.data_ptr


def span_of(tensors: Sequence[torch.Tensor]) -> Span | None:
    """A :class:`Span` over every tensor of ``tensors`` (CPU, one dtype, each element at a whole
    number of elements from the lowest); None where that does not hold. Each property is read
    in one C-level sweep over the tensors; a run of one shape and stride (the usual case: one
    template column) has its extent computed once."""
    if not tensors:
        return None
    dtype = tensors[0].dtype
    itemsize = tensors[0].element_size()
    if any(d.type != "cpu" for d in set(map(_device, tensors))) \
            or set(map(_dtype, tensors)) != {dtype} \
            or 0 in map(_numel, tensors) or any(map(_QUANTIZED, tensors)) \
            or any(map(_SPARSE, tensors)):
        return None
    strides = list(map(_stride, tensors))
    if any(s < 0 for s in set(chain.from_iterable(strides))):
        return None
    layouts = set(zip(map(_shape, tensors), strides))
    starts = list(map(_ptr, tensors))
    if len(layouts) == 1:
        (shape, stride), = layouts
        size = (1 + sum((n - 1) * s for n, s in zip(shape, stride))) * itemsize
        high = max(starts) + size
    else:
        high = max(a + (1 + sum((n - 1) * s for n, s in zip(t.shape, st))) * itemsize
                   for a, t, st in zip(starts, tensors, strides))
    return _span(np.array(starts, dtype=np.int64), high, itemsize, dtype)


def span_of_run(tensors: Sequence[torch.Tensor], dtype: torch.dtype,
                shape: torch.Size, starts: list[int] | None = None) -> Span | None:
    """:func:`span_of` for tensors the caller proved (their layout records) to be CPU tensors
    of ``dtype`` (not quantized), of ``shape`` and its row-major strides: only their
    addresses are read (the extent of each is its number of elements). ``starts``: each
    tensor's ``data_ptr()``, in order, where the caller proved them (else read here)."""
    numel = math.prod(shape)
    if not tensors or not numel:
        return None
    at = np.fromiter(map(_ptr, tensors), np.int64, len(tensors)) \
        if starts is None or len(starts) != len(tensors) else np.array(starts, dtype=np.int64)
    return _span(at, int(at.max()) + numel * dtype.itemsize, dtype.itemsize, dtype)


def disjoint(starts: np.ndarray, nbytes: int) -> bool:
    """Whether tensors of ``nbytes`` bytes each, contiguous, at data addresses ``starts``,
    share no byte (their starts sorted, each at least ``nbytes`` past the one before)."""
    return not (np.diff(np.sort(starts)) < nbytes).any()


def _span(starts: np.ndarray, high: int, itemsize: int, dtype: torch.dtype) -> Span | None:
    """The :class:`Span` from the lowest of ``starts`` to ``high`` (bytes); None where a start
    is not a whole number of elements from the lowest."""
    low = int(starts.min())
    if ((starts - low) % itemsize).any():
        return None
    raw = (ctypes.c_char * (high - low)).from_address(low)
    view = torch.frombuffer(raw, dtype=dtype)  # type: ignore[arg-type]
    return Span(view, low, itemsize, starts)
