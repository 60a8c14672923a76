"""CPU toys (review22e) for three v16 verdicts, with vLLM 0.33.0's own reload functions.

A. online/mxfp8.py:198 and modular_kernel.py:524 -- a MoE quant config rebuilt in quant-method
   PWAL from scales that replace_parameter creates (online: the scales do not exist before PWAL),
   also held by an experts object built in the same PWAL (FusedMoEExperts.__init__ stores
   quant_config). Does it alias reload temporaries after a layerwise reload, and go stale after a
   kernel-format reload?
B. compressed_tensors_moe_w8a8_fp8.py:320 -- the same with a checkpoint-format scale Parameter
   that exists before PWAL and is replaced with the same layout (copy_ on the temporary).
C. amx_mla.py:303-304 with mla_attention.py:1250 -- the AMX MLA path empties kv_b_proj.weight
   (replace_parameter(..., weight.new_empty(0))) after packing its own copies. Does a later
   reload of kv_b_proj go stale (real under the CPU clause) or raise (not real)?
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


def param(layer, name, t):
    p = nn.Parameter(t, requires_grad=False)
    layer.register_parameter(name, p)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})


class Experts:  # stands for FusedMoEExperts: __init__ stores quant_config (modular_kernel.py:524)
    def __init__(self, quant_config):
        self.quant_config = quant_config


class MoEMethod(QuantizeMethodBase):
    def __init__(self, scale_from_checkpoint: bool):
        self.ckpt = scale_from_checkpoint

    def create_weights(self, layer):
        param(layer, "w13_weight", torch.empty(4, 8))
        if self.ckpt:  # compressed-tensors w8a8 fp8: a registered checkpoint scale
            param(layer, "w13_weight_scale", torch.empty(4, 1))

    def process_weights_after_loading(self, layer):
        if self.ckpt:
            scale = layer.w13_weight_scale.data * 1.0  # same layout: replace_parameter copy_s
        else:  # online mxfp8: the scale is created by PWAL (_setup_kernel :195-196)
            scale = layer.w13_weight.abs().amax(1, keepdim=True)
        replace_parameter(layer, "w13_weight_scale", scale)
        self.moe_quant_config = types.SimpleNamespace(w1_scale=layer.w13_weight_scale)
        self.moe_kernel = types.SimpleNamespace(fused_experts=Experts(self.moe_quant_config))

    def apply(self, layer, x):
        return x * self.moe_kernel.fused_experts.quant_config.w1_scale.T


class Layer(nn.Module):
    def __init__(self, method):
        super().__init__()
        self.quant_method = method
        method.create_weights(self)


def load_moe(model, w, s):
    model.layer.w13_weight.weight_loader(model.layer.w13_weight, w)
    if model.layer.quant_method.ckpt:
        model.layer.w13_weight_scale.weight_loader(model.layer.w13_weight_scale, s)


for ckpt in (False, True):
    torch.manual_seed(0)
    model = nn.Module()
    model.layer = Layer(MoEMethod(ckpt))
    record_metadata_for_reloading(model)
    load_moe(model, torch.randn(4, 8), torch.rand(4, 1))
    model.layer.quant_method.process_weights_after_loading(model.layer)
    qm, layer = model.layer.quant_method, model.layer
    kept = layer.w13_weight_scale
    print(f"== {'B: checkpoint scale, same layout (ct w8a8 fp8 :320)' if ckpt else 'A: scale created by PWAL (online mxfp8 :198)'}")
    print("first load: config holds the kept param:", qm.moe_quant_config.w1_scale is kept)
    initialize_layerwise_reload(model)
    load_moe(model, torch.randn(4, 8), torch.rand(4, 1))
    finalize_layerwise_reload(model, CFG)
    cfg = qm.moe_quant_config.w1_scale
    exp = qm.moe_kernel.fused_experts.quant_config.w1_scale
    print("layerwise reload: kept param still registered:", layer.w13_weight_scale is kept)
    print("layerwise reload: config holds the kept param:", cfg is kept,
          "| same storage:", cfg.data_ptr() == kept.data_ptr(),
          "| experts.quant_config is the rebuilt config:",
          qm.moe_kernel.fused_experts.quant_config is qm.moe_quant_config,
          "| experts' scale is the kept param:", exp is kept)
    get_parameter_for_reload(model, "layer.w13_weight_scale").copy_(kept * 0 + 7)
    print("kernel-format reload: kept refilled to 7:", bool((kept == 7).all()),
          "| config/experts value stale:", not bool((cfg == 7).all()), not bool((exp == 7).all()))


# C. AMX MLA: kv_b_proj (an unquantized linear here) is emptied by the attention PWAL.
class Unquant(QuantizeMethodBase):
    def create_weights(self, layer):
        param(layer, "weight", torch.empty(6, 4))

    def process_weights_after_loading(self, layer):
        pass

    def apply(self, layer, x):
        return x @ layer.weight.T


class KvBProj(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = Unquant()
        self.quant_method.create_weights(self)


print("== C: AMX MLA, kv_b_proj.weight emptied by mla_attention.py:1250")
torch.manual_seed(0)
model = nn.Module()
model.kv_b_proj = KvBProj()
record_metadata_for_reloading(model)
model.kv_b_proj.weight.weight_loader(model.kv_b_proj.weight, torch.randn(6, 4))
packed = model.kv_b_proj.weight.data.t().contiguous()  # stands for _w_uk_packed (amx_mla.py:303)
replace_parameter(model.kv_b_proj, "weight", model.kv_b_proj.weight.new_empty(0))
print("after PWAL: kv_b_proj.weight shape", tuple(model.kv_b_proj.weight.shape))
try:
    get_parameter_for_reload(model, "kv_b_proj.weight").copy_(torch.randn(6, 4))
    print("kernel-format reload: no error (the packed copy would go stale)")
except RuntimeError as e:
    print("kernel-format reload raises:", str(e).splitlines()[0])
try:
    initialize_layerwise_reload(model)
    model.kv_b_proj.weight.weight_loader(model.kv_b_proj.weight, torch.randn(6, 4))
    finalize_layerwise_reload(model, CFG)
    print("layerwise reload: no error; weight shape", tuple(model.kv_b_proj.weight.shape))
except RuntimeError as e:
    print("layerwise reload raises:", str(e).splitlines()[0])
