"""A tiny module family for core tests: a layer, a plain holder object, a rebuilt kernel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


class Holder:
    """A plain (non-module) object, like a quant method or a kernel."""


@dataclass(frozen=True)
class Desc:
    """A frozen descriptor, like vLLM's FusedMoEQuantDesc."""

    scale: torch.Tensor | None = None
    gscale: torch.Tensor | None = None


class Kernel:
    """Rebuilt by every post-load step, like an experts object."""

    def __init__(self, weight: torch.Tensor, scale: torch.Tensor):
        self.desc = Desc(scale=scale, gscale=1.0 / scale)
        self.strides = torch.full((weight.shape[0],), weight.shape[1], dtype=torch.int64)


class Toy(nn.Module):
    def __init__(self, rows: int = 4, cols: int = 3, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(rows, cols, generator=g), requires_grad=False)
        self.scale = nn.Parameter(0.5 + torch.rand(rows, generator=g), requires_grad=False)
        self.sub = nn.Module()
        self.holder = Holder()
        self.kernel: Kernel | None = None

    def post_load(self) -> None:
        """Like a post-load step: new derived tensors every call."""
        self.kernel = Kernel(self.weight, self.scale)

    def load(self, seed: int) -> None:
        fresh = Toy(self.weight.shape[0], self.weight.shape[1], seed)
        with torch.no_grad():
            self.weight.copy_(fresh.weight)
            self.scale.copy_(fresh.scale)


class ToyStack(nn.Module):
    def __init__(self, n: int = 3):
        super().__init__()
        self.layers = nn.ModuleList(Toy(seed=i) for i in range(n))


class SeededStack(nn.Module):
    """``n`` layers made by ``layer(i)``; ``post_load`` runs each layer's, ``load(seed)`` loads
    layer ``i`` with seed ``seed * 100 + i`` (different weights per layer and per seed)."""

    def __init__(self, layer: Callable[[int], nn.Module], n: int):
        super().__init__()
        self.layers = nn.ModuleList(layer(i) for i in range(n))

    def post_load(self) -> None:
        for layer in self.layers:
            layer.post_load()

    def load(self, seed: int) -> None:
        for i, layer in enumerate(self.layers):
            layer.load(seed * 100 + i)
