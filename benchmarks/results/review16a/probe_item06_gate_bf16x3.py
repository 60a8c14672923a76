"""Item 6: GateLinear._bf16x3_weight (non-persistent buffer declared None in __init__,
filled by _GateLinearMethod PWAL). Real _GateLinearMethod + real split_bf16x3,
toy layer; vLLM 0.33.0 layerwise and kernel-format reload on CPU."""
import traceback

import torch
from torch import nn

from toy import ToyModel, first_load, kernel_format_reload, layerwise_reload, param
from vllm.model_executor.layers.fused_moe.router import bf16x3_router_gemm_rocm
from vllm.model_executor.layers.fused_moe.router.gate_linear import _GateLinearMethod


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.prefix = "gate"
        self.allow_rocm_bf16x3_router_gemm = True
        self.register_parameter("weight", param(8, 16))
        self.register_buffer("_bf16x3_weight", None, persistent=False)  # gate_linear.py:177
        self.quant_method = _GateLinearMethod()


def recon(layer):
    return layer._bf16x3_weight.float().sum(0)


torch.manual_seed(0)
w0, w1, w2 = (torch.randn(8, 16) for _ in range(3))

# Path A: kernel-format reload straight after the first load.
m = ToyModel(Gate())
first_load(m, {"layer.weight": w0})
g = m.layer
print("A first load: split == weight:", torch.equal(recon(g), g.weight))
ptr = g._bf16x3_weight.data_ptr()
kernel_format_reload(m, {"layer.weight": w1})
print("A kernel-format reload: weight == w1:", torch.equal(g.weight, w1),
      "| split still reconstructs OLD w0:", torch.equal(recon(g), w0),
      "| split == new weight:", torch.equal(recon(g), g.weight),
      "| split data_ptr kept:", g._bf16x3_weight.data_ptr() == ptr)

# Path B: layerwise reload.
m = ToyModel(Gate())
first_load(m, {"layer.weight": w0})
g = m.layer
try:
    layerwise_reload(m, {"layer.weight": w2})
    print("B layerwise reload: ok; split == new weight:", torch.equal(recon(g), g.weight),
          "| in _buffers:", "_bf16x3_weight" in g._buffers)
except Exception as exc:  # record the failure mode, it is the finding
    print("B layerwise reload RAISES:", type(exc).__name__, exc)
    traceback.print_exc(limit=3)
