"""CPU toy (review23e): gate_linear.py:398 `_bf16x3_weight`, with vLLM 0.33.0's real _GateLinearMethod.

A toy layer keeps GateLinear's registration (__init__ :177: register_buffer("_bf16x3_weight", None,
persistent=False)) and its flag; split_bf16x3 is pure torch. The layerwise reload functions and the
kernel-format reload (get_parameter_for_reload(...).copy_) are vLLM's own.
"""
import types

import torch
from torch import nn

from vllm.model_executor.layers.fused_moe.router.gate_linear import _GateLinearMethod
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload, initialize_layerwise_reload, record_metadata_for_reloading)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.prefix = "toy.gate"
        self.weight = nn.Parameter(torch.empty(4, 8, dtype=torch.float32), requires_grad=False)
        set_weight_attrs(self.weight, {"weight_loader": default_weight_loader})
        self.allow_rocm_bf16x3_router_gemm = True  # the ROCm gfx950 fp32-router tier
        self.register_buffer("_bf16x3_weight", None, persistent=False)
        self.quant_method = _GateLinearMethod()


torch.manual_seed(0)
model = nn.Module()
model.gate = Gate()
record_metadata_for_reloading(model)
w0 = torch.randn(4, 8)
model.gate.weight.weight_loader(model.gate.weight, w0)
model.gate.quant_method.process_weights_after_loading(model.gate)
g = model.gate
print("after load: weight kept:", type(g.weight).__name__, "| split registered as buffer:",
      "_bf16x3_weight" in g._buffers, "| split sums to w0:",
      torch.equal(g._bf16x3_weight.float().sum(0), w0))

try:
    initialize_layerwise_reload(model)
    g.weight.weight_loader(g.weight, torch.randn(4, 8))
    finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
    print("layerwise reload: completed; split sums to new weight:",
          torch.equal(g._bf16x3_weight.float().sum(0), g.weight))
except Exception as exc:  # report what the reload path does, then continue on a fresh model
    print("layerwise reload raised:", type(exc).__name__, exc)

model = nn.Module()
model.gate = Gate()
record_metadata_for_reloading(model)
model.gate.weight.weight_loader(model.gate.weight, w0)
model.gate.quant_method.process_weights_after_loading(model.gate)
g = model.gate
split = g._bf16x3_weight
w2 = torch.randn(4, 8)
get_parameter_for_reload(model, "gate.weight").copy_(w2)
print("kernel-format reload: weight refilled:", torch.equal(g.weight, w2),
      "| split object unchanged:", g._bf16x3_weight is split,
      "| split still sums to old w0 (stale):", torch.equal(g._bf16x3_weight.float().sum(0), w0))
