"""rules30 probe: run vLLM 0.33.0's real online-MXFP4 MoE code on CPU.

    python3 benchmarks/results/rules30/probe_online_mxfp4.py > benchmarks/results/rules30/probe_online_mxfp4.txt 2>&1

1. build a layer with the real ``Mxfp4OnlineMoEMethod.create_weights`` (no requantization
   source): which parameters it has;
2. call the real ``convert_weight_to_mxfp4_moe_kernel_format`` with each backend of the
   ``_setup_kernel`` branch that stores ``layer.w13_weight`` (TRITON_BACKENDS + AITER_MXFP4_FP8),
   as installed: where it raises;
3. the same layer plus a ``w13_weight_scale``/``w2_weight_scale`` parameter, as a
   requantization source's ``create_weights`` registers (e.g. ModelOptNvFp4FusedMoE,
   modelopt.py:973), as installed: whether the conversion then returns (the store is reached);
4. a control: step 2 again with ``_swizzle_mxfp4`` / ``PrecisionConfig`` stubbed (the same
   raises, so they do not depend on the triton_kernels swizzle working on CPU).
"""
import traceback
from types import SimpleNamespace

import torch

import vllm.model_executor.layers.fused_moe.oracle.mxfp4 as oracle
from vllm.model_executor.layers.fused_moe.oracle.mxfp4 import (
    Mxfp4MoeBackend, TRITON_BACKENDS, convert_weight_to_mxfp4_moe_kernel_format)
from vllm.model_executor.layers.quantization.online.mxfp4 import Mxfp4OnlineMoEMethod

E, H, I = 2, 64, 64


def online_layer():
    method = Mxfp4OnlineMoEMethod.__new__(Mxfp4OnlineMoEMethod)  # skip backend selection
    method.requantization_source = None
    method.requantization_source_parameters = {}
    method.moe = SimpleNamespace(w13_num_shards=2, has_bias=False)
    layer = torch.nn.Module()
    layer.moe_config = SimpleNamespace(hidden_dim_unpadded=H,
                                       intermediate_size_per_partition_unpadded=I)
    try:
        method.create_weights(layer, num_experts=E, hidden_size=H,
                              intermediate_size_per_partition=I, params_dtype=torch.bfloat16,
                              weight_loader=lambda *a, **k: None)
    except Exception:  # the layerwise wrapper needs more of a real layer; report it
        print("create_weights raised after registering:", traceback.format_exc().splitlines()[-1])
    return layer


def convert(backend, layer):
    w13 = torch.randint(0, 255, (E, 2 * I, H // 2), dtype=torch.uint8)
    w2 = torch.randint(0, 255, (E, H, I // 2), dtype=torch.uint8)
    s13 = torch.randint(0, 255, (E, 2 * I, H // 32), dtype=torch.uint8)
    s2 = torch.randint(0, 255, (E, H, I // 32), dtype=torch.uint8)
    try:
        convert_weight_to_mxfp4_moe_kernel_format(
            mxfp4_backend=backend, layer=layer, w13_weight=w13, w2_weight=w2,
            w13_weight_scale=s13, w2_weight_scale=s2, w13_bias=None, w2_bias=None)
        return "returned (the store after it is reached)"
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{type(exc).__name__}: {exc} at {tb.filename.split('site-packages/')[-1]}:{tb.lineno} `{tb.line}`"


layer = online_layer()
print("online layer parameters:", sorted(n for n, _ in layer.named_parameters()))
print("online layer has w13_weight_scale:", hasattr(layer, "w13_weight_scale"))
print("w13_input_scale:", getattr(layer, "w13_input_scale", "<absent>"))
backends = [*TRITON_BACKENDS, Mxfp4MoeBackend.AITER_MXFP4_FP8]
print("\n== as installed ==")
for b in backends:
    print(f"{b.name}: {convert(b, online_layer())}")

print("\n== with a requantization source's w13_weight_scale / w2_weight_scale registered ==")
for b in backends:
    src = online_layer()
    src.register_parameter("w13_weight_scale", torch.nn.Parameter(
        torch.zeros(E, 2 * I, H // 32, dtype=torch.uint8), requires_grad=False))
    src.register_parameter("w2_weight_scale", torch.nn.Parameter(
        torch.zeros(E, H, I // 32, dtype=torch.uint8), requires_grad=False))
    print(f"{b.name}: {convert(b, src)}")

print("\n== _swizzle_mxfp4 / PrecisionConfig / _mx_scale_kwargs stubbed ==")
oracle._swizzle_mxfp4 = lambda w, s: (w, None, s)
oracle.PrecisionConfig = lambda **kw: SimpleNamespace(**kw)
oracle.FlexCtx = lambda **kw: SimpleNamespace(**kw)
oracle._mx_scale_kwargs = lambda s: {"scale": s}
for b in backends:
    print(f"{b.name}: {convert(b, online_layer())}")

