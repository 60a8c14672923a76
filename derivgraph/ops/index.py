"""Index ops: integer ranges, repeats, comparisons and gathers along one dim.

* ``arange(n, dtype=int64)``: ``0 .. n-1`` (a creation op: the compiler passes ``device=``);
* ``repeat_interleave(x, repeats, dim=None)``: each element repeated ``repeats`` times (an
  integer; flattened like torch when ``dim`` is None);
* ``eq(a, b)``: elementwise ``a == b`` as ``bool`` (broadcasting);
* ``index_select(x, dim, index)``: ``x`` gathered along ``dim`` at the 1-D integer ``index``.

Together they write vLLM's LiLiCorr relative-slot attention bias as a formula
(``specs/vllm_lilicorr.yaml``). Every op has a shape/dtype rule (``infer=``: no meta kernel
runs) and, where torch has one, an ``out=`` variant.

An index is **a constant**: ``index_select``'s ``index`` must depend on params alone (never on
a weight), so the compiler computes it once at compile (constant subgraphs are left out of the
pass and bound as globals) and checks its bounds there, once, before any gather runs
(:func:`index_issues`): an out-of-range index would be an ``IndexError`` on CPU and a
device-side assert on CUDA. ``DG041 index-not-constant`` and ``DG042 index-out-of-range``
report a spec that breaks this, at the spec's file:line, before any tensor is touched. Sizes
are bounded like every other tensor (``DG016``, :func:`derivgraph.limits.check_numel`).
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph.ops.registry import broadcast_shapes, dtype_of, register_op

__all__ = ["INDEX_ARGS"]

#: op name -> position of its index argument (and the dim argument's position)
INDEX_ARGS: dict[str, tuple[int, int]] = {"index_select": (2, 1)}


def _count(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"expected an integer count, got {type(n).__name__} {n!r} (counts are "
                        "params or config numbers, not tensors)")
    if n < 0:
        raise ValueError(f"expected a count >= 0, got {n}")
    return n


# ---- arange ---------------------------------------------------------------------------------

def _arange(n: Any, dtype: Any = "int64", device: Any = None) -> torch.Tensor:
    """``0, 1, ..., n-1`` (torch.arange(n)) in ``dtype``."""
    return torch.arange(_count(n), dtype=dtype_of(dtype), device=device)


def _arange_infer(n: Any, dtype: Any = "int64", device: Any = None) -> torch.Tensor:
    return torch.empty((_count(n),), dtype=dtype_of(dtype), device="meta")


# ---- repeat_interleave ----------------------------------------------------------------------

def _repeat_interleave(x: torch.Tensor, repeats: Any, dim: Any = None) -> torch.Tensor:
    """Each element of x repeated ``repeats`` times (along ``dim``; flattened if None)."""
    return torch.repeat_interleave(x, _count(repeats), dim=dim)


def _repeat_shape(x: torch.Tensor, repeats: Any, dim: Any) -> list[int]:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"repeat_interleave repeats a tensor, not {type(x).__name__}")
    n = _count(repeats)
    if dim is None:
        return [x.numel() * n]
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim() <= dim < x.dim():
        raise IndexError(f"dim {dim!r} is out of range for a {x.dim()}-d tensor")
    shape = list(x.shape)
    shape[dim % x.dim()] *= n
    return shape


def _repeat_infer(x: torch.Tensor, repeats: Any, dim: Any = None) -> torch.Tensor:
    return torch.empty(_repeat_shape(x, repeats, dim), dtype=x.dtype, device="meta")


# ---- eq -------------------------------------------------------------------------------------

def _eq(a: Any, b: Any) -> torch.Tensor:
    """``a == b`` elementwise, as bool (broadcasting)."""
    return torch.eq(a, b)


def _eq_out(a: Any, b: Any, *, out: torch.Tensor) -> torch.Tensor:
    return torch.eq(a, b, out=out)


def _eq_infer(a: Any, b: Any) -> torch.Tensor:

    shapes = [tuple(t.shape) for t in (a, b) if isinstance(t, torch.Tensor)]
    if not shapes:
        raise TypeError("eq compares tensors; at least one argument must be a tensor")
    for t in (a, b):
        if not isinstance(t, (torch.Tensor, int, float, bool)):
            raise TypeError(f"eq cannot compare a {type(t).__name__}")
    return torch.empty(broadcast_shapes(*shapes), dtype=torch.bool, device="meta")


# ---- index_select ---------------------------------------------------------------------------

def _index_select(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """x gathered along ``dim`` at the 1-D integer ``index`` (torch.index_select)."""
    return torch.index_select(x, dim, index)


def _index_select_out(x: torch.Tensor, dim: int, index: torch.Tensor, *,
                      out: torch.Tensor) -> torch.Tensor:
    return torch.index_select(x, dim, index, out=out)


def _index_select_infer(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not isinstance(index, torch.Tensor):
        raise TypeError("index_select(x, dim, index) takes a tensor and an integer index tensor")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim() <= dim < max(x.dim(), 1):
        raise IndexError(f"dim {dim!r} is out of range for a {x.dim()}-d tensor")
    if index.dtype not in (torch.int64, torch.int32) or index.dim() > 1:
        raise TypeError(f"the index must be a 1-D int64/int32 tensor, got {index.dim()}-d "
                        f"{str(index.dtype).removeprefix('torch.')} (flatten it, and view the "
                        "result back)")
    shape = list(x.shape)
    if shape:
        shape[dim % x.dim()] = index.numel()
    return torch.empty(shape, dtype=x.dtype, device="meta")


register_op("arange", _arange, kind="create", infer=_arange_infer)
register_op("repeat_interleave", _repeat_interleave, infer=_repeat_infer)
register_op("eq", _eq, out=_eq_out, infer=_eq_infer)
register_op("index_select", _index_select, out=_index_select_out, infer=_index_select_infer)
