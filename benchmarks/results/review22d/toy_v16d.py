"""CPU toys (review22d, recall v16 judge D) on vLLM 0.33.0's own reload functions.

(a) a MoE quant config rebuilt in quant-method PWAL from a scale that PWAL replace_parameter()s
    (created by PWAL: online/mxfp8.py:195-198; existing name, same dtype: compressed_tensors_moe_w8a8_fp8.py:313-320),
    and an experts object built in the same PWAL that keeps that config (modular_kernel.py:524);
(b) AMX MLA: MLAAttention PWAL empties kv_b_proj.weight (mla_attention.py:1250); does a reload raise?
(c) FBGEMM FP8: input_scale_ub is a registered Parameter no checkpoint loads (fbgemm_fp8.py:142-146);
    what value does a layerwise reload leave in it?
"""
import types

import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload, initialize_layerwise_reload, record_metadata_for_reloading)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter, set_weight_attrs

CFG = types.SimpleNamespace(dtype=torch.float32)


def param(shape, dtype=torch.float32, fill=None):
    t = torch.empty(*shape, dtype=dtype) if fill is None else torch.full(shape, fill, dtype=dtype)
    p = nn.Parameter(t, requires_grad=False)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})
    return p


class MoEMethod(QuantizeMethodBase):
    def __init__(self, scale_created_by_pwal: bool):
        self.new_name = scale_created_by_pwal

    def create_weights(self, layer):
        layer.register_parameter("w13_weight", param((4, 8)))
        if not self.new_name:
            layer.register_parameter("w13_weight_scale", param((4, 1)))

    def process_weights_after_loading(self, layer):
        scale = (layer.w13_weight.abs().amax(1, keepdim=True) if self.new_name
                 else layer.w13_weight_scale * 1.0)
        replace_parameter(layer, "w13_weight_scale", scale)
        self.moe_quant_config = types.SimpleNamespace(w1_scale=layer.w13_weight_scale)
        experts = types.SimpleNamespace(quant_config=self.moe_quant_config)  # FusedMoEExperts.__init__
        self.moe_kernel = types.SimpleNamespace(fused_experts=experts)

    def apply(self, layer, x):
        return x * self.moe_quant_config.w1_scale.T


class Layer(nn.Module):
    def __init__(self, method):
        super().__init__()
        self.quant_method = method
        method.create_weights(self)


def toy_a():
    for new_name in (True, False):
        torch.manual_seed(0)
        model = nn.Module()
        model.layer = Layer(MoEMethod(new_name))
        record_metadata_for_reloading(model)
        layer, qm = model.layer, model.layer.quant_method

        def load():
            layer.w13_weight.weight_loader(layer.w13_weight, torch.randn(4, 8))
            if not new_name:
                layer.w13_weight_scale.weight_loader(layer.w13_weight_scale, torch.rand(4, 1))

        load()
        qm.process_weights_after_loading(layer)
        kept = layer.w13_weight_scale
        print(f"== (a) scale {'created by PWAL (online mxfp8)' if new_name else 'existing name, same dtype (CT W8A8 FP8 MoE)'}")
        print("first load: config holds kept param:", qm.moe_quant_config.w1_scale is kept,
              "| experts.quant_config is the config:", qm.moe_kernel.fused_experts.quant_config is qm.moe_quant_config)
        initialize_layerwise_reload(model)
        load()
        finalize_layerwise_reload(model, CFG)
        cfg = qm.moe_quant_config.w1_scale
        exp = qm.moe_kernel.fused_experts.quant_config.w1_scale
        print("layerwise reload: kept still registered:", layer.w13_weight_scale is kept,
              "| config holds kept:", cfg is kept, "| same storage:", cfg.data_ptr() == kept.data_ptr(),
              "| experts' config holds kept:", exp is kept, "| values equal now:", torch.equal(cfg, kept))
        get_parameter_for_reload(model, "layer.w13_weight_scale").copy_(kept * 0 + 7)
        print("kernel-format reload: kept refilled to 7:", bool((kept == 7).all()),
              "| config stale:", not bool((cfg == 7).all()),
              "| experts' config stale:", not bool((exp == 7).all()))


def toy_b():
    print("== (b) AMX MLA: kv_b_proj.weight emptied by MLAAttention PWAL")
    for mode in ("layerwise", "kernel-format"):
        model = nn.Module()
        model.kv_b_proj = nn.Module()
        model.kv_b_proj.register_parameter("weight", param((6, 4)))
        record_metadata_for_reloading(model)
        w = model.kv_b_proj.weight
        w.weight_loader(w, torch.randn(6, 4))
        packed = w.data.t().contiguous()  # AMXMLAImpl PWAL: _w_uk_packed/_w_uv_packed from kv_b_proj
        replace_parameter(model.kv_b_proj, "weight", w.new_empty(0))  # mla_attention.py:1250
        print(f"after load: kv_b_proj.weight shape {tuple(model.kv_b_proj.weight.shape)}, packed {tuple(packed.shape)}")
        try:
            if mode == "layerwise":
                initialize_layerwise_reload(model)
                m = model.kv_b_proj.weight
                m.weight_loader(m, torch.randn(6, 4))
                finalize_layerwise_reload(model, CFG)
            else:
                get_parameter_for_reload(model, "kv_b_proj.weight").copy_(torch.randn(6, 4))
            print(f"{mode} reload: no error; kv_b_proj.weight shape {tuple(model.kv_b_proj.weight.shape)}")
        except RuntimeError as e:
            print(f"{mode} reload raises RuntimeError: {str(e).splitlines()[0][:120]}")


class Fbgemm(QuantizeMethodBase):
    def create_weights(self, layer):
        layer.register_parameter("weight", param((4, 8)))
        layer.input_scale_ub = nn.Parameter(torch.tensor(1200.0), requires_grad=False)

    def process_weights_after_loading(self, layer):
        pass

    def apply(self, layer, x):
        return x


def toy_c():
    print("== (c) FBGEMM FP8 input_scale_ub (registered, not in the checkpoint)")
    torch.manual_seed(0)
    model = nn.Module()
    model.layer = Layer(Fbgemm())
    record_metadata_for_reloading(model)
    layer = model.layer
    layer.weight.weight_loader(layer.weight, torch.randn(4, 8))
    kept = layer.input_scale_ub
    print("after load: input_scale_ub =", float(kept))
    initialize_layerwise_reload(model)
    layer.weight.weight_loader(layer.weight, torch.randn(4, 8))
    finalize_layerwise_reload(model, CFG)
    print("after layerwise reload: same object:", layer.input_scale_ub is kept,
          "| value =", float(layer.input_scale_ub), "(1200.0 expected)")


if __name__ == "__main__":
    toy_a()
    toy_b()
    toy_c()
