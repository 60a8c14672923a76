"""Weight loading shared by the reference modules."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["load_in_place"]


def load_in_place(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """An in-place reload: copy each named weight into its Parameter; nothing is rebuilt."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value)
