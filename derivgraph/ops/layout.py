"""Layout ops the spec library needs beyond torch's basic vocabulary.

* ``group_broadcast(scale, shape)``: a block-scale grid repeated over its blocks to ``shape``
  (vLLM's ``quant_utils.group_broadcast``), so a block-quantized FP8 weight dequantizes as
  ``cast(w, float32) * group_broadcast(cast(s, float32), w.shape)``.
* ``pad(x, dim, size, value=0)``: x padded at the end of ``dim`` to ``size`` elements (a TP16
  dense projection padded to a multiple of the kernel's tile).
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph.ops.registry import register_op

__all__: list[str] = []


def _group_broadcast(scale: torch.Tensor, shape: Any) -> torch.Tensor:
    """``scale`` repeated over blocks to ``shape`` (each dim divides the target's)."""
    t = scale
    shape = tuple(shape)
    if t.ndim < len(shape):
        t = t.reshape(*([1] * (len(shape) - t.ndim)), *t.shape)
    for i, size in enumerate(shape):
        have = t.shape[i]
        if have != size and have != 1:
            if size % have:
                raise ValueError(f"group_broadcast: dim {i} of {list(scale.shape)} does not "
                                 f"divide {size}")
            t = t.repeat_interleave(size // have, dim=i)
    return t.expand(shape).contiguous()


def _pad(x: torch.Tensor, dim: int, size: int, value: float = 0.0) -> torch.Tensor:
    """x padded with ``value`` at the end of ``dim`` to ``size`` elements."""
    dim = dim % x.dim()
    if size < x.shape[dim]:
        raise ValueError(f"pad: size {size} is smaller than dim {dim} ({x.shape[dim]})")
    shape = list(x.shape)
    shape[dim] = size
    out = torch.full(shape, value, dtype=x.dtype, device=x.device)
    out.narrow(dim, 0, x.shape[dim]).copy_(x)
    return out


def _pad_out(x: torch.Tensor, dim: int, size: int, value: float = 0.0, *,
             out: torch.Tensor) -> torch.Tensor:
    dim = dim % x.dim()
    n = x.shape[dim]
    out.narrow(dim, 0, n).copy_(x)
    out.narrow(dim, n, size - n).fill_(value)
    return out


register_op("group_broadcast", _group_broadcast)
register_op("pad", _pad, out=_pad_out)
