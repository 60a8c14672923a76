"""CPU probe with vLLM 0.33.0's real quant-config builders and experts class.

Positions 1 and 2: a toy RoutedExperts-like layer whose quant-method PWAL does
what ModelOptNvFp4FusedMoE._build_moe_kernel does for the FLASHINFER_B12X
backend: make_nvfp4_moe_quant_config(...) -> FlashInferB12xExperts(moe, qc)
-> experts.process_weights_after_loading(layer).

Position 6: the same toy with make_fp8_moe_quant_config(FLASHINFER_CUTLASS,
per-tensor, layer=layer), as CompressedTensorsW8A8Fp8MoEMethod's PWAL builds it
for static per-tensor checkpoints; checks whether qc.a2_gscale (read at
flashinfer_cutlass_moe.py:290) keeps its storage over a layerwise reload.

Reload sequence as in probe_reload_patterns.py (vLLM's own functions).
"""

import gc
import logging
import weakref
from types import SimpleNamespace

import torch
import torch.nn as nn

from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.config import (
    FusedMoEConfig,
    FusedMoEParallelConfig,
    RoutingMethodType,
)
from vllm.model_executor.layers.fused_moe.experts.flashinfer_b12x_moe import (
    FlashInferB12xExperts,
)
from vllm.model_executor.layers.fused_moe.oracle.fp8 import (
    Fp8MoeBackend,
    make_fp8_moe_quant_config,
)
from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import (
    NvFp4MoeBackend,
    make_nvfp4_moe_quant_config,
)
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import record_metadata_for_reloading
from vllm.model_executor.model_loader.reload.inplace import reload_weights
from vllm.model_executor.model_loader.utils import process_weights_after_loading
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs

E, H, I = 4, 256, 128
FP8 = torch.float8_e4m3fn

SHAPES_NVFP4 = {
    "w13_weight": ((E, 2 * I, H // 2), torch.uint8),
    "w13_weight_scale": ((E, 2 * I, H // 16), FP8),
    "w13_weight_scale_2": ((E,), torch.float32),
    "w13_input_scale": ((E,), torch.float32),
    "w2_weight": ((E, H, I // 2), torch.uint8),
    "w2_weight_scale": ((E, H, I // 16), FP8),
    "w2_weight_scale_2": ((E,), torch.float32),
    "w2_input_scale": ((E,), torch.float32),
}
SHAPES_FP8 = {
    "w13_weight": ((E, 2 * I, H), FP8),
    "w13_weight_scale": ((E,), torch.float32),
    "w13_input_scale": ((1,), torch.float32),
    "w2_weight": ((E, H, I), FP8),
    "w2_weight_scale": ((E,), torch.float32),
    "w2_input_scale": ((1,), torch.float32),
}


def moe_config():
    return FusedMoEConfig(
        num_experts=E, experts_per_token=2, hidden_dim=H, intermediate_size=I,
        num_local_experts=E, num_logical_experts=E, activation=MoEActivation.SILU,
        device="cpu", routing_method=RoutingMethodType.Renormalize,
        moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(),
        in_dtype=torch.bfloat16,
    )


class Method(QuantizeMethodBase):
    def __init__(self, kind):
        self.kind = kind
        self.moe = moe_config()

    def create_weights(self, layer, *a, **k):
        shapes = SHAPES_NVFP4 if self.kind == "b12x" else SHAPES_FP8
        for name, (shape, dt) in shapes.items():
            p = nn.Parameter(torch.empty(shape, dtype=dt), requires_grad=False)
            layer.register_parameter(name, p)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})

    def apply(self, *a, **k):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        if self.kind == "b12x":
            self.moe_quant_config = make_nvfp4_moe_quant_config(
                backend=NvFp4MoeBackend.FLASHINFER_B12X,
                w13_scale=layer.w13_weight_scale, w2_scale=layer.w2_weight_scale,
                w13_scale_2=layer.w13_weight_scale_2, w2_scale_2=layer.w2_weight_scale_2,
                a13_scale=layer.w13_input_scale, a2_scale=layer.w2_input_scale,
                layer=layer,
            )
            self.experts = FlashInferB12xExperts(self.moe, self.moe_quant_config)
            self.experts.process_weights_after_loading(layer)
        else:
            self.moe_quant_config = make_fp8_moe_quant_config(
                fp8_backend=Fp8MoeBackend.FLASHINFER_CUTLASS,
                w1_scale=layer.w13_weight_scale, w2_scale=layer.w2_weight_scale,
                a1_scale=layer.w13_input_scale, a2_scale=layer.w2_input_scale,
                layer=layer,
            )


class Layer(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.quant_method = Method(kind)
        self.quant_method.create_weights(self)


class Model(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.layer = Layer(kind)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
        return {n for n, _ in weights}


def ckpt(kind, seed):
    g = torch.Generator().manual_seed(seed)
    shapes = SHAPES_NVFP4 if kind == "b12x" else SHAPES_FP8
    out = {}
    for name, (shape, dt) in shapes.items():
        if dt == torch.uint8:
            t = torch.randint(0, 255, shape, generator=g, dtype=torch.uint8)
        else:
            t = (torch.rand(shape, generator=g) + 0.5).to(dt)
        out[f"layer.{name}"] = t
    return out


def main():
    mc = SimpleNamespace(word_embeddings_untied_by_checkpoint=False, dtype=torch.float32,
                         quantization=None)
    vc = SimpleNamespace(model_config=mc, load_config=None, lora_config=None)

    # ---- positions 1, 2 (B12x) ----
    m = Model("b12x")
    record_metadata_for_reloading(m)
    c0, c1 = ckpt("b12x", 0), ckpt("b12x", 1)
    m.load_weights(c0.items())
    process_weights_after_loading(m, mc, torch.device("cpu"))
    L = m.layer
    ex0 = L.quant_method.experts
    kept_scale = L.w13_weight_scale
    print("[b12x first load] w1_sf_mma shares kept w13_weight_scale storage:",
          ex0.w1_sf_mma.untyped_storage().data_ptr() == kept_scale.untyped_storage().data_ptr())
    print("[b12x first load] _fc2_input_scale is qc.a2_gscale:",
          ex0._fc2_input_scale is L.quant_method.moe_quant_config.a2_gscale,
          "values:", ex0._fc2_input_scale.tolist())
    old_fc2_ptr = ex0._fc2_input_scale.data_ptr()
    old_fc2_ref = weakref.ref(ex0._fc2_input_scale)
    old_mma_ptr = ex0.w1_sf_mma.untyped_storage().data_ptr()
    del ex0
    reload_weights(vc, m, iter(c1.items()), None, is_checkpoint_format=True)
    gc.collect()
    ex1 = L.quant_method.experts
    print("[b12x layerwise] new _fc2_input_scale ptr == old ptr:",
          ex1._fc2_input_scale.data_ptr() == old_fc2_ptr,
          "| old _fc2_input_scale tensor still alive:", old_fc2_ref() is not None)
    print("[b12x layerwise] kept w13_weight_scale is the registered param again:",
          L.w13_weight_scale is kept_scale)
    print("[b12x layerwise] new w1_sf_mma storage == kept param storage:",
          ex1.w1_sf_mma.untyped_storage().data_ptr() == kept_scale.untyped_storage().data_ptr(),
          "| old (captured) w1_sf_mma storage == kept param storage:",
          old_mma_ptr == kept_scale.untyped_storage().data_ptr())
    expect = (c1["layer.w13_weight_scale"].float()
              * c1["layer.w13_weight_scale_2"].view(-1, 1, 1)).to(FP8)
    print("[b12x layerwise] kept param value fresh:",
          torch.equal(kept_scale.data.view(torch.uint8), expect.view(torch.uint8)),
          "| new experts' view value fresh:",
          torch.equal(ex1.w1_sf_mma.contiguous().view(torch.uint8).reshape(-1).sort().values,
                      expect.reshape(-1).view(torch.uint8).sort().values))
    # kernel-format reload of the kept scale with other values
    c2 = ckpt("b12x", 2)
    kf = {n: p.data.clone() for n, p in m.named_parameters()}
    kf["layer.w13_weight_scale"] = c2["layer.w13_weight_scale"]
    reload_weights(vc, m, iter(kf.items()), None, is_checkpoint_format=False)
    print("[b12x kernel-format] kept param now c2:",
          torch.equal(kept_scale.data.view(torch.uint8),
                      c2["layer.w13_weight_scale"].view(torch.uint8)),
          "| new experts' view (eager) still c1-derived:",
          torch.equal(ex1.w1_sf_mma.contiguous().view(torch.uint8).reshape(-1).sort().values,
                      expect.reshape(-1).view(torch.uint8).sort().values))

    # ---- position 6 (FlashInfer CUTLASS FP8 per-tensor container) ----
    m = Model("fp8")
    record_metadata_for_reloading(m)
    c0, c1 = ckpt("fp8", 0), ckpt("fp8", 1)
    m.load_weights(c0.items())
    process_weights_after_loading(m, mc, torch.device("cpu"))
    qc0 = m.layer.quant_method.moe_quant_config
    old_a2g_ptr = qc0.a2_gscale.data_ptr()
    old_a2g_ref = weakref.ref(qc0.a2_gscale)
    print("[fp8 fi-cutlass first load] qc.a2_gscale == 1/w2_input_scale:",
          torch.allclose(qc0.a2_gscale, 1.0 / c0["layer.w2_input_scale"]),
          "| qc.w1_scale is layer.w13_weight_scale:", qc0.w1_scale is m.layer.w13_weight_scale)
    del qc0
    reload_weights(vc, m, iter(c1.items()), None, is_checkpoint_format=True)
    gc.collect()
    qc1 = m.layer.quant_method.moe_quant_config
    print("[fp8 fi-cutlass layerwise] a2_gscale ptr same:", qc1.a2_gscale.data_ptr() == old_a2g_ptr,
          "| old a2_gscale tensor still alive:", old_a2g_ref() is not None,
          "| new value fresh:", torch.allclose(qc1.a2_gscale, 1.0 / c1["layer.w2_input_scale"]))
    print("[fp8 fi-cutlass layerwise] qc.w1_scale is kept layer param:",
          qc1.w1_scale is m.layer.w13_weight_scale)


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    main()
