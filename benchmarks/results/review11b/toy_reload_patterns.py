"""Toy check of three store patterns under vLLM 0.33.0 reload (CPU).

A: PWAL deletes a Parameter and stores a fresh plain tensor under the same name
   (mxfp4 Triton branch: `del layer.w2_weight` then `layer.w2_weight = w2`).
B: PWAL builds a container referencing `layer.w13_weight_scale` (moe_quant_config).
C: a copy built inside `model.load_weights` (DFlash2 `_context_kv_weight`).
"""
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


class QM(QuantizeMethodBase):
    def create_weights(self, layer):
        for n in ("w2_weight", "w13_weight_scale"):
            p = nn.Parameter(torch.empty(4), requires_grad=False)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})
            layer.register_parameter(n, p)

    def apply(self, layer, x):
        return x

    def process_weights_after_loading(self, layer):
        w2 = layer.w2_weight.data * 2  # "swizzled" fresh tensor
        del layer.w2_weight  # pattern A
        layer.w2_weight = w2
        replace_parameter(layer, "w13_weight_scale", layer.w13_weight_scale.data * 3)
        self.qc = {"w1_scale": layer.w13_weight_scale}  # pattern B


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = QM()
        self.quant_method.create_weights(self)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.moe = Layer()
        self.proj = nn.Linear(4, 4, bias=False)
        set_weight_attrs(self.proj.weight, {"weight_loader": default_weight_loader})

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            params[name].weight_loader(params[name], w)
        self.kv_copy = torch.cat([self.proj.weight[2:]])  # pattern C


def ckpt(v):
    return [("moe.w2_weight", torch.full((4,), v)),
            ("moe.w13_weight_scale", torch.full((4,), v)),
            ("proj.weight", torch.full((4, 4), v))]


m = Model()
record_metadata_for_reloading(m)
m.load_weights(ckpt(1.0))
m.moe.quant_method.process_weights_after_loading(m.moe)
kept_scale = m.moe.w13_weight_scale
old_w2_ptr = m.moe.w2_weight.data_ptr()
old_kv_ptr = m.kv_copy.data_ptr()
print("initial: qc is kept param:", m.moe.quant_method.qc["w1_scale"] is kept_scale)

# layerwise reload
initialize_layerwise_reload(m)
m.load_weights(ckpt(2.0))
finalize_layerwise_reload(m, None)
print("A after layerwise: w2 in _parameters:", "w2_weight" in m.moe._parameters,
      "value", m.moe.w2_weight[0].item(), "storage moved:", m.moe.w2_weight.data_ptr() != old_w2_ptr)
qc = m.moe.quant_method.qc["w1_scale"]
print("B after layerwise: kept refilled", m.moe.w13_weight_scale[0].item(),
      "kept object same:", m.moe.w13_weight_scale is kept_scale,
      "qc is kept:", qc is m.moe.w13_weight_scale, "qc value", qc[0].item())
print("C after layerwise: kv value", m.kv_copy[0, 0].item(), "storage moved:", m.kv_copy.data_ptr() != old_kv_ptr)

# kernel-format reload after it (direct copy into named params)
with torch.no_grad():
    for name, w in [("moe.w13_weight_scale", torch.full((4,), 30.0)), ("proj.weight", torch.full((4, 4), 5.0))]:
        get_parameter_for_reload(m, name).copy_(w)
print("B after kernel-format: kept", m.moe.w13_weight_scale[0].item(), "qc (eager reader)", qc[0].item(),
      "stale:", qc[0].item() != m.moe.w13_weight_scale[0].item())
print("C after kernel-format: proj", m.proj.weight[0, 0].item(), "kv copy", m.kv_copy[0, 0].item(),
      "stale:", m.kv_copy[0, 0].item() != m.proj.weight[0, 0].item())
