"""Position 27: the Triton-format MXFP4 pattern of QuarkOCP_MX_MoEMethod._setup_kernel
(oracle/mxfp4.py: del layer.w13_weight / w13_weight_scale; layer.w13_weight = <non-torch
tensor>; self.w13_precision_config = PrecisionConfig(swizzled scale)) under vLLM's own
layerwise reload functions: does the reload complete, and does the scale storage the
first capture would read move?"""

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


class TritonTensor:  # stands in for triton_kernels.tensor.Tensor (not a torch.Tensor)
    def __init__(self, t):
        self.storage = t


class PrecisionConfig:
    def __init__(self, scale):
        self.weight_scale = scale


class Method(QuantizeMethodBase):
    def __init__(self):
        self.w13_precision_config = None

    def create_weights(self, layer, *a, **k):
        layer.w13_weight = nn.Parameter(torch.empty(2, 4), requires_grad=False)
        layer.w13_weight_scale = nn.Parameter(torch.empty(2, 1), requires_grad=False)
        layer.w13_bias = nn.Parameter(torch.empty(2), requires_grad=False)

    def apply(self, layer, *a, **k):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        w, s = layer.w13_weight.data.clone(), layer.w13_weight_scale.data * 1.0  # "swizzle"
        del layer.w13_weight
        del layer.w13_weight_scale
        layer.w13_weight = TritonTensor(w)
        self.w13_precision_config = PrecisionConfig(s)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.Module()
        self.experts.quant_method = Method()
        self.experts.quant_method.create_weights(self.experts)

    def load_weights(self, weights):
        for name, t in weights:
            p = get_parameter_for_reload(self, name)
            getattr(p, "weight_loader", default_weight_loader)(p, t)


def ckpt(v):
    return [("experts.w13_weight", torch.full((2, 4), v)),
            ("experts.w13_weight_scale", torch.full((2, 1), v)),
            ("experts.w13_bias", torch.full((2,), v))]


model = Model()
record_metadata_for_reloading(model)
model.load_weights(ckpt(1.0))
model.experts.quant_method.process_weights_after_loading(model.experts)
qm = model.experts.quant_method
captured = qm.w13_precision_config.weight_scale  # what a graph captured at startup reads
ptr0 = captured.data_ptr()

initialize_layerwise_reload(model)
model.load_weights(ckpt(3.0))
finalize_layerwise_reload(model, None)
now = qm.w13_precision_config.weight_scale
print("layerwise reload completed without error")
print("eager (current config) scale:", now[0, 0].item())
print("captured scale storage moved:", now.data_ptr() != ptr0,
      "| captured tensor still reads", captured[0, 0].item())
print("w13_bias kept parameter refilled in place:", model.experts.w13_bias[0].item())
