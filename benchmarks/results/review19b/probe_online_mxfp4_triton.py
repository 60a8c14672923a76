"""Position 17: online/mxfp4.py:238 ``layer.w13_weight = w13`` (Triton / AITER_MXFP4_FP8 branch).

Runs vLLM's real ``Mxfp4OnlineMoEMethod._setup_kernel`` and the real
``convert_weight_to_mxfp4_moe_kernel_format`` on a toy layer, with only the triton_kernels
pieces stubbed (``_swizzle_mxfp4``, ``PrecisionConfig``, ``FlexCtx``: not installed on CPU).

Questions:
1. Which TRITON_BACKENDS / AITER_MXFP4_FP8 can the online method's selector return for its
   activation key kMxfp4Dynamic (the filter used by both the auto and the explicit path)?
2. For a reachable one, does PWAL get past the store and finish, so that a reader can run?
"""

from __future__ import annotations

import traceback
from types import SimpleNamespace

import torch
from torch import nn

import vllm.model_executor.layers.fused_moe.oracle.mxfp4 as oracle
from vllm.model_executor.layers.fused_moe.oracle.mxfp4 import (
    Mxfp4MoeBackend,
    TRITON_BACKENDS,
    _filter_by_activation,
    map_mxfp4_backend,
)
from vllm.model_executor.layers.quantization.online.mxfp4 import Mxfp4OnlineMoEMethod
from vllm.model_executor.layers.quantization.utils.quant_utils import kMxfp4Dynamic

E, N, K = 2, 64, 64


def stub_triton():
    oracle._swizzle_mxfp4 = lambda w, s, num_warps=8: (w.clone(), None, s.clone())
    oracle.PrecisionConfig = lambda **kw: SimpleNamespace(**kw)
    oracle.FlexCtx = lambda **kw: SimpleNamespace(**kw)
    oracle._mx_scale_kwargs = lambda s: {"weight_scale": s}


def toy_layer(with_source_scales: bool) -> nn.Module:
    layer = nn.Module()
    # online create_weights registers only w13_weight / w2_weight (+ biases)
    layer.register_parameter("w13_weight", nn.Parameter(torch.rand(E, 2 * N, K), requires_grad=False))
    layer.register_parameter("w2_weight", nn.Parameter(torch.rand(E, K, N), requires_grad=False))
    if with_source_scales:
        # a requantization source (e.g. a serialized FP8/MXFP4 checkpoint) that registered scales
        layer.register_parameter("w13_weight_scale", nn.Parameter(torch.rand(E, 2 * N, 2), requires_grad=False))
        layer.register_parameter("w2_weight_scale", nn.Parameter(torch.rand(E, K, 2), requires_grad=False))
    layer.w13_input_scale = None
    layer.w2_input_scale = None
    return layer


def run_setup(backend: Mxfp4MoeBackend, with_source_scales: bool) -> None:
    method = Mxfp4OnlineMoEMethod.__new__(Mxfp4OnlineMoEMethod)
    method.mxfp4_backend = backend
    method.experts_cls = None
    method.weight_scale_name = "weight_scale"
    method.moe = SimpleNamespace(use_mxfp4_w4a4_dsv4=False)
    layer = toy_layer(with_source_scales)
    w13 = torch.randint(0, 255, (E, 2 * N, K // 2), dtype=torch.uint8)
    w2 = torch.randint(0, 255, (E, K, N // 2), dtype=torch.uint8)
    s13 = torch.randint(0, 255, (E, 2 * N, K // 32), dtype=torch.uint8)
    s2 = torch.randint(0, 255, (E, K, N // 32), dtype=torch.uint8)
    tag = f"{backend.value}, source scales={with_source_scales}"
    try:
        method._setup_kernel(layer, w13, w2, s13, s2, None, None)
        print(f"[{tag}] PWAL finished; store executed: {not isinstance(layer.w13_weight, nn.Parameter)}")
    except AttributeError as e:
        executed = "w13_weight" in layer.__dict__
        frames = [f for f in traceback.extract_tb(e.__traceback__) if "/vllm/" in f.filename]
        where = f"{frames[-1].filename.split('/vllm/', 1)[1]}:{frames[-1].lineno}" if frames else "?"
        print(f"[{tag}] PWAL RAISED AttributeError at vllm/{where}: {e}; "
              f"store at line 238 executed first: {executed}")


if __name__ == "__main__":
    print("TRITON_BACKENDS:", [b.value for b in TRITON_BACKENDS])
    for alias in ("triton", "triton_unfused", "aiter", "aiter_triton_mxfp4_bf16", "aiter_mxfp4_fp8"):
        got = _filter_by_activation(map_mxfp4_backend(alias), kMxfp4Dynamic)
        reach = [b.value for b in got if b in TRITON_BACKENDS or b == Mxfp4MoeBackend.AITER_MXFP4_FP8]
        print(f"moe_backend={alias!r}: candidates for kMxfp4Dynamic -> {[b.value for b in got]}; "
              f"reaching the line-238 branch: {reach}")
    stub_triton()
    for backend in TRITON_BACKENDS:
        for src in (False, True):
            run_setup(backend, src)
