"""CPU toy (review22g): a quant config rebuilt in quant-method PWAL after replace_parameter of a
scale with the SAME dtype (fp8.py:693-702 / online/fp8.py:548-553 / mxfp8 moe:131-134 pattern,
same shape) or the same dtype and a transposed shape (auto_gptq.py:631,676,693 pattern).
Uses vLLM 0.33.0's own layerwise reload functions and the kernel-format reload
(reload/inplace.py get_parameter_for_reload(...).copy_).
"""
import types

import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter, set_weight_attrs


class Method(QuantizeMethodBase):
    def __init__(self, transpose: bool):
        self.transpose = transpose

    def create_weights(self, layer):
        shape = (2, 3, 4)
        s = nn.Parameter(torch.empty(*shape), requires_grad=False)
        layer.register_parameter("w13_scales", s)
        set_weight_attrs(s, {"weight_loader": default_weight_loader})

    def process_weights_after_loading(self, layer):
        if self.transpose:  # auto_gptq: K-first -> N-first, same dtype
            new = layer.w13_scales.data.transpose(1, 2).contiguous()
        else:  # fp8 per-tensor / mxfp8: same dtype, same shape, new storage
            new = layer.w13_scales.data * 1.0
        replace_parameter(layer, "w13_scales", new)
        self.moe_quant_config = types.SimpleNamespace(w1_scale=layer.w13_scales)

    def apply(self, layer, x):
        return x


class Layer(nn.Module):
    def __init__(self, transpose):
        super().__init__()
        self.quant_method = Method(transpose)
        self.quant_method.create_weights(self)


def load(model, s):
    p = model.layer.w13_scales
    p.weight_loader(p, s)


for transpose in (False, True):
    torch.manual_seed(0)
    model = nn.Module()
    model.layer = Layer(transpose)
    record_metadata_for_reloading(model)
    load(model, torch.rand(2, 3, 4))
    model.layer.quant_method.process_weights_after_loading(model.layer)
    qm, layer = model.layer.quant_method, model.layer
    kept = layer.w13_scales
    print(f"== replace_parameter same dtype, {'transposed shape' if transpose else 'same shape'}")
    print("first load: config holds the kept param:", qm.moe_quant_config.w1_scale is kept)
    initialize_layerwise_reload(model)
    load(model, torch.rand(2, 3, 4))
    finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
    cfg = qm.moe_quant_config.w1_scale
    print("layerwise reload: kept param still registered:", layer.w13_scales is kept)
    print("layerwise reload: config holds the kept param:", cfg is kept,
          "| same storage:", cfg.data_ptr() == kept.data_ptr(),
          "| values equal now:", torch.equal(cfg, kept))
    get_parameter_for_reload(model, "layer.w13_scales").copy_(torch.full_like(kept, 7.0))
    print("kernel-format reload: kept refilled to 7:", bool((kept == 7).all()),
          "| config value stale:", not bool((cfg == 7).all()))
