"""A CUTLASS W4A8 MoE layer mirroring vLLM 0.33.0's owners and names, for engine-computed tensors.

No vLLM needed. :class:`CompressedTensorsW4A8Fp8MoEMethod` mirrors
``compressed_tensors_moe_w4a8_fp8.py:150-195``: every post-load step calls
:func:`cutlass_encode_and_reorder_int4b_grouped` (in vLLM a CUDA op; here a CPU stand-in that
returns the reordered weight and a per-expert layout-stride tensor), keeps ``b_strides1/2`` on
the quant method and hands the same objects to a new :class:`CutlassExpertsW4A8Fp8`
(``experts/cutlass_moe.py:1294-1327``), which also builds its a/c/s stride constants. The
matching specs are ``specs/vllm_moe_w4a8_engine.yaml`` (b_strides, ``kind: engine``) and the
``vllm-cutlass-w4a8-strides`` spec of ``specs/vllm_moe_cutlass.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

__all__ = [
    "CompressedTensorsW4A8Fp8MoEMethod", "CutlassExpertsW4A8Fp8", "RoutedExperts",
    "W4A8Model", "build_w4a8_model", "cutlass_encode_and_reorder_int4b_grouped",
    "make_w4a8_weights", "w4a8_layout_strides",
]


def w4a8_layout_strides(w: torch.Tensor) -> torch.Tensor:
    """Per expert ``[n, k, n * k]`` of a packed ``[E, n, k // 8]`` weight (int64): a stand-in
    for the CUTLASS reordered-layout strides the CUDA op returns."""
    e, n, k8 = w.shape
    k = 8 * k8
    row = torch.tensor([n, k, n * k], dtype=torch.int64, device=w.device)
    return row.expand(e, 3).contiguous()


def cutlass_encode_and_reorder_int4b_grouped(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """CPU stand-in for ``ops.cutlass_encode_and_reorder_int4b_grouped``: new tensors each call."""
    return w.clone(), w4a8_layout_strides(w)


@dataclass(frozen=True)
class MoEConfig:
    """The FusedMoEConfig fields the experts read."""

    num_local_experts: int
    hidden_dim: int
    intermediate_size_per_partition: int


class CutlassExpertsW4A8Fp8:
    """Stride constants allocated in ``__init__``; ``b_strides1/2`` handed in by the method."""

    def __init__(self, moe_config: MoEConfig, b_strides1: torch.Tensor, b_strides2: torch.Tensor,
                 device: torch.device):
        e, k = moe_config.num_local_experts, moe_config.hidden_dim
        n = moe_config.intermediate_size_per_partition
        self.moe_config = moe_config
        self.a_strides1 = torch.full((e,), k, dtype=torch.int64, device=device)
        self.a_strides2 = torch.full((e,), n, dtype=torch.int64, device=device)
        self.c_strides1 = torch.full((e,), 2 * n, dtype=torch.int64, device=device)
        self.c_strides2 = self.a_strides1
        self.s_strides1 = torch.zeros((e, 2), dtype=torch.int64, device=device)
        self.s_strides1[:, 0] = 2 * n
        self.s_strides2 = torch.zeros((e, 2), dtype=torch.int64, device=device)
        self.s_strides2[:, 0] = k
        self.b_strides1 = b_strides1
        self.b_strides2 = b_strides2


class MoEKernel:
    def __init__(self, fused_experts: CutlassExpertsW4A8Fp8):
        self.fused_experts = fused_experts


class CompressedTensorsW4A8Fp8MoEMethod:
    """Rebuilds b_strides (an opaque op) and the experts on every post-load step."""

    def __init__(self, moe: MoEConfig):
        self.moe = moe
        self.moe_kernel: MoEKernel | None = None

    def process_weights_after_loading(self, layer: RoutedExperts) -> None:
        _, self.b_strides1 = cutlass_encode_and_reorder_int4b_grouped(layer.w13_weight)
        _, self.b_strides2 = cutlass_encode_and_reorder_int4b_grouped(layer.w2_weight)
        self.moe_kernel = MoEKernel(CutlassExpertsW4A8Fp8(
            self.moe, self.b_strides1, self.b_strides2, layer.w13_weight.device))


class RoutedExperts(nn.Module):
    """int4 weights packed 8 per int32, as vLLM's W4A8 checkpoints hold them."""

    def __init__(self, experts: int = 4, hidden: int = 64, intermediate: int = 32):
        super().__init__()
        self.w13_weight = nn.Parameter(torch.zeros(experts, 2 * intermediate, hidden // 8,
                                                   dtype=torch.int32), requires_grad=False)
        self.w2_weight = nn.Parameter(torch.zeros(experts, hidden, intermediate // 8,
                                                  dtype=torch.int32), requires_grad=False)
        self.quant_method = CompressedTensorsW4A8Fp8MoEMethod(
            MoEConfig(experts, hidden, intermediate))


class W4A8Model(nn.Module):
    def __init__(self, layers: int = 2):
        super().__init__()
        self.layers = nn.ModuleList(RoutedExperts() for _ in range(layers))

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        params = dict(self.named_parameters())
        for name, value in weights.items():
            params[name].data.copy_(value)

    def process_weights_after_loading(self) -> None:
        for layer in self.layers:
            layer.quant_method.process_weights_after_loading(layer)


def make_w4a8_weights(model: W4A8Model, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {n: torch.randint(-2**31, 2**31 - 1, p.shape, generator=gen, dtype=torch.int32)
            for n, p in model.named_parameters()}


def build_w4a8_model(seed: int = 0, layers: int = 2) -> W4A8Model:
    """A cold start: construct, load, post-load."""
    model = W4A8Model(layers)
    model.load_weights(make_w4a8_weights(model, seed))
    model.process_weights_after_loading()
    return model
