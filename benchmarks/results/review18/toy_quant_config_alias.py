"""CPU toy (review18): does a quant config rebuilt in quant-method PWAL alias reload temporaries?

Mimics the pattern of online/mxfp4.py:246-253 and compressed_tensors_moe_w4a8_fp8.py:182-184:
PWAL replace_parameter()s a scale (new name, or an existing name with a new dtype) and then stores
a config holding layer.<scale>. Uses vLLM 0.33.0's own layerwise reload functions and the
kernel-format reload (reload/inplace.py: get_parameter_for_reload(...).copy_).
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


class Method(QuantizeMethodBase):
    def __init__(self, new_name: bool):
        self.new_name = new_name

    def create_weights(self, layer):
        w = nn.Parameter(torch.empty(4, 8), requires_grad=False)
        layer.register_parameter("w13_weight", w)
        set_weight_attrs(w, {"weight_loader": default_weight_loader})
        if not self.new_name:  # w4a8: a checkpoint-format scale, replaced with a new dtype
            s = nn.Parameter(torch.empty(4, 1, dtype=torch.bfloat16), requires_grad=False)
            layer.register_parameter("w13_weight_scale", s)
            set_weight_attrs(s, {"weight_loader": default_weight_loader})

    def process_weights_after_loading(self, layer):
        if self.new_name:  # online mxfp4: the scale is created by PWAL
            scale = layer.w13_weight.abs().amax(1, keepdim=True)
        else:
            scale = layer.w13_weight_scale.float() * 2
        replace_parameter(layer, "w13_weight_scale", scale)
        self.moe_quant_config = types.SimpleNamespace(w1_scale=layer.w13_weight_scale)

    def apply(self, layer, x):
        return x * self.moe_quant_config.w1_scale.T


class Layer(nn.Module):
    def __init__(self, new_name):
        super().__init__()
        self.quant_method = Method(new_name)
        self.quant_method.create_weights(self)


def load(model, w, s):
    model.layer.w13_weight.weight_loader(model.layer.w13_weight, w)
    if "w13_weight_scale" in dict(model.layer.named_parameters()) and not model.layer.quant_method.new_name:
        model.layer.w13_weight_scale.weight_loader(model.layer.w13_weight_scale, s)


for new_name in (True, False):
    torch.manual_seed(0)
    model = nn.Module()
    model.layer = Layer(new_name)
    record_metadata_for_reloading(model)
    w0, s0 = torch.randn(4, 8), torch.rand(4, 1, dtype=torch.bfloat16)
    load(model, w0, s0)
    model.layer.quant_method.process_weights_after_loading(model.layer)
    qm, layer = model.layer.quant_method, model.layer
    kept = layer.w13_weight_scale
    print(f"== scale {'created by PWAL (online mxfp4)' if new_name else 'replaced with new dtype (w4a8)'}")
    print("first load: config holds the kept param:", qm.moe_quant_config.w1_scale is kept)

    # layerwise reload (is_checkpoint_format=True)
    w1, s1 = torch.randn(4, 8), torch.rand(4, 1, dtype=torch.bfloat16)
    initialize_layerwise_reload(model)
    load(model, w1, s1)
    finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
    cfg = qm.moe_quant_config.w1_scale
    print("layerwise reload: kept param still registered:", layer.w13_weight_scale is kept)
    print("layerwise reload: config holds the kept param:", cfg is kept,
          "| same storage:", cfg.data_ptr() == kept.data_ptr(),
          "| values equal now:", torch.equal(cfg, kept))

    # kernel-format reload (is_checkpoint_format=False): copy_ into the registered parameter
    get_parameter_for_reload(model, "layer.w13_weight_scale").copy_(kept * 0 + 7)
    print("kernel-format reload: kept refilled to 7:", bool((kept == 7).all()),
          "| config value still old (stale):", not bool((cfg == 7).all()))
