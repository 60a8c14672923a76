"""CPU toy (review23e): does a reload refresh the prefetch offloader's staging copy `_cpu_storage`?

Uses vLLM 0.33.0's own _CpuParamOffloader (offloader/prefetch.py: __init__ -> :661/:677,
assign_static_buffer -> :705/:707 then :742) on a one-parameter layer, with a CPU tensor standing in
for the GPU static buffer, the prefetch copy of :563 (`gpu_buffer.copy_(cpu_storage)`), vLLM's
layerwise reload functions and the kernel-format reload (get_parameter_for_reload(...).copy_).
"""
import types

import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload, initialize_layerwise_reload, record_metadata_for_reloading)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.offloader import prefetch as prefetch_mod
from vllm.model_executor.offloader.prefetch import _CpuParamOffloader
from vllm.model_executor.utils import set_weight_attrs


class Method(QuantizeMethodBase):
    def create_weights(self, layer):
        w = nn.Parameter(torch.empty(4, 8), requires_grad=False)
        layer.register_parameter("weight", w)
        set_weight_attrs(w, {"weight_loader": default_weight_loader})

    def process_weights_after_loading(self, layer):
        pass

    def apply(self, layer, x):
        return x @ layer.weight.T


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = Method()
        self.quant_method.create_weights(self)


# No CUDA here: pinned host memory is unavailable, so take the unpinned branch (:707).
prefetch_mod.should_pin_memory = lambda: False
torch.manual_seed(0)
model = nn.Module()
model.layer = Layer()
record_metadata_for_reloading(model)
off = _CpuParamOffloader(model.layer, "weight")  # wrap_modules time: :661 alloc, :677 param.data = it
w0 = torch.randn(4, 8)
model.layer.weight.weight_loader(model.layer.weight, w0)  # initial load writes the staging copy
model.layer.quant_method.process_weights_after_loading(model.layer)
off.sync_cpu_storage()  # post_init
static_buffer = torch.empty(4, 8)  # stands in for the pool's GPU slot
off.assign_static_buffer(static_buffer)  # :705/:707 then :742 param.data = buffer
kept = model.layer.weight


def prefetch():  # offloader/prefetch.py:563
    off._gpu_buffer.copy_(off._cpu_storage)


prefetch()
print("first load: buffer holds w0:", torch.equal(model.layer.weight, w0))

w1 = torch.randn(4, 8)
initialize_layerwise_reload(model)
model.layer.weight.weight_loader(model.layer.weight, w1)
finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
print("layerwise reload: kept param still registered:", model.layer.weight is kept,
      "| param storage is the static buffer:", kept.data_ptr() == static_buffer.data_ptr())
print("layerwise reload: param holds w1 right after reload:", torch.equal(kept, w1))
prefetch()
print("layerwise reload, next prefetch: param holds w1:", torch.equal(kept, w1),
      "| param back to old w0 (stale staging copy):", torch.equal(kept, w0))

w2 = torch.randn(4, 8)
get_parameter_for_reload(model, "layer.weight").copy_(w2)
print("kernel-format reload: param holds w2:", torch.equal(kept, w2))
prefetch()
print("kernel-format reload, next prefetch: param back to w0 (stale):", torch.equal(kept, w0))
