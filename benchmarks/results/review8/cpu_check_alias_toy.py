"""CPU check: an experts object built in quant-method PWAL that registers `gemm1_alpha` on the
layer and keeps `layer.gemm1_alpha` (as TrtLlmNvFp4ExpertsBase.process_weights_after_loading)
holds the reload temporary after vLLM's layerwise reload, not the kept parameter."""
import torch
from torch import nn
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload.layerwise import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs


class Experts:
    def __init__(self, n):
        self.gemm1_alpha = torch.full((n,), 1.5)

    def process_weights_after_loading(self, layer):
        layer.register_parameter("gemm1_alpha", nn.Parameter(self.gemm1_alpha, requires_grad=False))
        self.gemm1_alpha = layer.gemm1_alpha


class QM(QuantizeMethodBase):
    def create_weights(self, *a, **k):
        pass

    def apply(self, *a, **k):
        pass

    def process_weights_after_loading(self, layer):
        self.experts = Experts(4)  # rebuilt on every PWAL, as _build_moe_kernel
        self.experts.process_weights_after_loading(layer)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4), requires_grad=False)
        set_weight_attrs(self.w, {"weight_loader": default_weight_loader})
        self.quant_method = QM()


m = nn.Sequential(Layer())
layer = m[0]
record_metadata_for_reloading(m)
layer.w.weight_loader(layer.w, torch.ones(4))
layer.quant_method.process_weights_after_loading(layer)
kept = layer.gemm1_alpha
print("initial: experts alias is the layer param:", layer.quant_method.experts.gemm1_alpha is kept)
initialize_layerwise_reload(m)
layer.w.weight_loader(layer.w, torch.full((4,), 2.0))
finalize_layerwise_reload(m, None)
e = layer.quant_method.experts.gemm1_alpha
print("after reload: layer.gemm1_alpha is kept:", layer.gemm1_alpha is kept)
print("after reload: rebuilt experts' gemm1_alpha is kept:", e is kept,
      "| same storage:", e.data_ptr() == kept.data_ptr())
kept.data[0] = 9.0  # e.g. an EPLB rearrangement of the kept parameter
print("kept changed in place -> experts see it:", e[0].item() == 9.0)
