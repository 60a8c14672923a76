"""Reference W4A8 MoE layer: ``b_strides1/2`` made by an opaque engine op, like vLLM 0.33.0.

vLLM's ``CompressedTensorsW4A8Fp8MoEMethod.process_weights_after_loading`` gets ``b_strides1``
and ``b_strides2`` from the CUDA op ``ops.cutlass_encode_and_reorder_int4b_grouped(w)`` (which
also reorders the int4 weights), keeps them on the quant method and passes them to
``CutlassExpertsW4A8Fp8``. :func:`encode_and_reorder_int4b_grouped` stands in for the op: its
values depend on the weight layout only, and no formula reproduces them, so the spec
(``specs/vllm_moe_w4a8_engine.yaml``, ``vllm-cutlass-w4a8-b-strides``) declares them
engine-computed.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["RoutedExperts", "build_w4a8_layer", "encode_and_reorder_int4b_grouped"]

E, K, N = 4, 64, 32


def encode_and_reorder_int4b_grouped(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Stand-in for the CUDA op: (reordered weight, per-expert StrideB as [E, 3] int64)."""
    e, rows, cols = w.shape
    strides = torch.tensor([[cols * 2, 1, rows * cols * 2]] * e, dtype=torch.int64)
    return w.flip(-1).contiguous(), strides


class CutlassExpertsW4A8Fp8:
    def __init__(self, b_strides1: torch.Tensor, b_strides2: torch.Tensor):
        self.b_strides1, self.b_strides2 = b_strides1, b_strides2


class FusedMoEKernel:
    def __init__(self, fused_experts: CutlassExpertsW4A8Fp8):
        self.fused_experts = fused_experts


class CompressedTensorsW4A8Fp8MoEMethod:
    def process_weights_after_loading(self, layer: RoutedExperts) -> None:
        _, self.b_strides1 = encode_and_reorder_int4b_grouped(layer.w13_weight_packed)
        _, self.b_strides2 = encode_and_reorder_int4b_grouped(layer.w2_weight_packed)
        self.moe_kernel = FusedMoEKernel(CutlassExpertsW4A8Fp8(self.b_strides1, self.b_strides2))


class RoutedExperts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w13_weight_packed = nn.Parameter(torch.zeros(E, 2 * N, K // 8, dtype=torch.int32),
                                              requires_grad=False)
        self.w2_weight_packed = nn.Parameter(torch.zeros(E, K, N // 8, dtype=torch.int32),
                                             requires_grad=False)
        self.quant_method = CompressedTensorsW4A8Fp8MoEMethod()


def build_w4a8_layer() -> RoutedExperts:
    layer = RoutedExperts()
    layer.quant_method.process_weights_after_loading(layer)
    return layer
