"""Comparing tensor values: bit-for-bit, and the largest difference within a tolerance.

One implementation for every consumer: adoption at compile (:mod:`derivgraph.planner`), the
lowered-pass check, folds (:mod:`derivgraph.compiler.fold`) and the runtime spec-value check
(:mod:`derivgraph.audit.runtime.spec_values`).
"""

from __future__ import annotations

import torch

__all__ = ["bits_equal", "max_difference"]

_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _as_bits(t: torch.Tensor) -> torch.Tensor:
    view = _INT_OF_SIZE.get(t.element_size())
    if view is None or t.dtype == view:
        return t
    return t.contiguous().view(view)


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaN payloads and signed zeros included; fp8 too)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(_as_bits(a), _as_bits(b.to(a.device)))


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest ``|a - b|`` over ``a``'s shape, compared as float64 (complex as is).

    0.0 when every element is equal, NaN pairs included; ``inf`` when the shapes differ or only
    one side of a pair is NaN.
    """
    if a.shape != b.shape:
        return float("inf")
    if a.numel() == 0 or (a.dtype == b.dtype and bits_equal(a, b)):
        return 0.0
    a64 = a.detach() if a.dtype.is_complex else a.detach().to(torch.float64)
    b64 = b.detach().to(device=a.device, dtype=a64.dtype)
    same = (a64 == b64) | (torch.isnan(a64) & torch.isnan(b64))
    if bool(same.all()):
        return 0.0
    diff = torch.nan_to_num((a64 - b64).abs(), nan=float("inf"))  # NaN against a number
    return float(torch.where(same, torch.zeros_like(diff), diff).max())
