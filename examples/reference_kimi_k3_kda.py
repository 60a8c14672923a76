"""Reference Kimi-K3 KDA decode front: loader-filled FP32 norm and conv copies, like vLLM 0.33.0.

Mirrors ``vllm/models/kimi_k3/nvidia/kda.py::KimiK3DeltaAttention`` (owners and names):
``conv1d.weight`` ``[3 * P, 1, C]`` (q/k/v shards of the short convolution, ``P`` the local
projection size, ``C`` the kernel size) and ``o_norm.weight`` (bf16). With a fused decode
backend, the weight loaders also fill two non-persistent buffers:
``decode_conv1d_weight[i] = shard_i.squeeze(1).transpose(0, 1)`` ``[3, C, P]`` and
``decode_norm_weight = o_norm.weight`` upcast to float32. vLLM's own loaders can be passed in
(``loaders=``) so a test runs vLLM's code. The spec is ``specs/vllm_kimi_k3_kda.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["KimiK3DeltaAttention", "build_kda", "make_kda_weights", "reference_loaders"]

P, C, HEAD_DIM = 16, 4, 8


def reference_loaders(conv: torch.Tensor, norm: torch.Tensor) -> tuple[Callable[..., None],
                                                                       Callable[..., None]]:
    """Loaders like vLLM's ``_make_decode_conv1d_weight_loader`` / ``_make_decode_norm_weight_
    loader`` (TP = 1)."""

    def conv_loader(param: torch.Tensor, loaded: torch.Tensor, shard: int) -> None:
        loaded = loaded.unsqueeze(1) if loaded.dim() == 2 else loaded
        param.data[shard * P:(shard + 1) * P].copy_(loaded)
        conv[shard].copy_(loaded.squeeze(1).transpose(0, 1))

    def norm_loader(param: torch.Tensor, loaded: torch.Tensor) -> None:
        param.data.copy_(loaded)
        norm.copy_(param.data)

    return conv_loader, norm_loader


class FusedRMSNormGated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(HEAD_DIM, dtype=torch.bfloat16),
                                   requires_grad=False)


class ColumnParallelLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(3 * P, 1, C, dtype=torch.bfloat16),
                                   requires_grad=False)


class KimiK3DeltaAttention(nn.Module):
    def __init__(self, loaders: Any = None):
        super().__init__()
        self.local_projection_size, self.conv_size = P, C
        self.conv1d = ColumnParallelLinear()
        self.o_norm = FusedRMSNormGated()
        self.register_buffer("decode_conv1d_weight", torch.empty(3, C, P, dtype=torch.bfloat16),
                             persistent=False)
        self.register_buffer("decode_norm_weight", torch.empty(HEAD_DIM, dtype=torch.float32),
                             persistent=False)
        make = loaders or reference_loaders
        self.conv_loader, self.norm_loader = make(self.decode_conv1d_weight,
                                                  self.decode_norm_weight)

    def load_weights(self, weights: dict[str, torch.Tensor], in_place: bool = False) -> None:
        """Through the loaders (a load), or straight into the Parameters (an in-place reload)."""
        with torch.no_grad():
            if in_place:
                self.conv1d.weight.copy_(torch.cat(
                    [weights[f"conv1d.{i}"].unsqueeze(1) for i in range(3)], 0))
                self.o_norm.weight.copy_(weights["o_norm.weight"])
                return
            for i in range(3):
                self.conv_loader(self.conv1d.weight, weights[f"conv1d.{i}"], i)
            self.norm_loader(self.o_norm.weight, weights["o_norm.weight"])


def make_kda_weights(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {f"conv1d.{i}": torch.randn(P, C, generator=g).bfloat16() for i in range(3)}
    out["o_norm.weight"] = (1 + 0.1 * torch.randn(HEAD_DIM, generator=g)).bfloat16()
    return out


def build_kda(weights: dict[str, torch.Tensor], loaders: Any = None) -> nn.Module:
    root = nn.Module()
    root.self_attn = KimiK3DeltaAttention(loaders)
    root.self_attn.load_weights(weights)
    return root
