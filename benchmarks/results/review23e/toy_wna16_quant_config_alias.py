"""CPU toy (review23e): moe_wna16.py:415 pattern, a quant config built in quant-method PWAL.

MoeWNA16Method.process_weights_after_loading replace_parameter()s the checkpoint scales with the
backend's converted ones (:459-462), then _setup_kernel stores
self.moe_quant_config = make_wna16_moe_quant_config(w1_scale=layer.w13_scales, ...) (:404-415).
This toy keeps that order, for a converted scale of the same shape (copy_ into the object) and of a
new shape (.data rebind), and runs vLLM 0.33.0's own layerwise reload functions and the
kernel-format reload (get_parameter_for_reload(...).copy_).
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
    def __init__(self, new_shape: bool):
        self.new_shape = new_shape

    def create_weights(self, layer):
        for name, shape in (("w13_qweight", (2, 4, 8)), ("w13_scales", (2, 4, 2))):
            p = nn.Parameter(torch.empty(*shape), requires_grad=False)
            layer.register_parameter(name, p)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})

    def process_weights_after_loading(self, layer):
        s = layer.w13_scales.data
        converted = s.transpose(1, 2).contiguous() if self.new_shape else s * 1.0
        replace_parameter(layer, "w13_scales", converted)
        self.moe_quant_config = types.SimpleNamespace(w1_scale=layer.w13_scales)

    def apply(self, layer, x):
        return x * self.moe_quant_config.w1_scale.sum()


class Layer(nn.Module):
    def __init__(self, new_shape):
        super().__init__()
        self.quant_method = Method(new_shape)
        self.quant_method.create_weights(self)


def load(layer, w, s):
    layer.w13_qweight.weight_loader(layer.w13_qweight, w)
    layer.w13_scales.weight_loader(layer.w13_scales, s)


for new_shape in (False, True):
    torch.manual_seed(0)
    model = nn.Module()
    model.layer = Layer(new_shape)
    record_metadata_for_reloading(model)
    load(model.layer, torch.randn(2, 4, 8), torch.rand(2, 4, 2))
    model.layer.quant_method.process_weights_after_loading(model.layer)
    qm, layer = model.layer.quant_method, model.layer
    kept = layer.w13_scales
    print(f"== converted scale {'with a new shape (.data rebind)' if new_shape else 'same shape (copy_)'}")
    print("first load: config holds the kept param:", qm.moe_quant_config.w1_scale is kept)

    initialize_layerwise_reload(model)
    load(model.layer, torch.randn(2, 4, 8), torch.rand(2, 4, 2))
    finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
    cfg = qm.moe_quant_config.w1_scale
    print("layerwise reload: kept param still registered:", layer.w13_scales is kept)
    print("layerwise reload: config holds the kept param:", cfg is kept,
          "| same storage:", cfg.data_ptr() == kept.data_ptr(),
          "| values equal now:", torch.equal(cfg, kept))

    get_parameter_for_reload(model, "layer.w13_scales").copy_(kept * 0 + 7)
    print("kernel-format reload: kept refilled to 7:", bool((kept == 7).all()),
          "| config value still old (stale):", not bool((cfg == 7).all()))
