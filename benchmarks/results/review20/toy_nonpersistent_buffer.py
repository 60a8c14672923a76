"""CPU toy (review20): do constant non-persistent buffers on a layer that loads weights survive a
layerwise reload as the same object with the same value?

Mimics moondream3.py:469-492 (Moondream3TextMoE: fc1_weight/fc2_weight Parameters loaded from the
checkpoint, `_expert_map` and `_fused_w1_bias` registered with persistent=False in __init__ and read
by forward at :520-521). Uses vLLM 0.33.0's own record_metadata_for_reloading,
initialize_layerwise_reload and finalize_layerwise_reload, then a kernel-format reload
(get_parameter_for_reload(...).copy_).
"""
import types

import torch
from torch import nn

from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload, initialize_layerwise_reload, record_metadata_for_reloading)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1_weight = nn.Parameter(torch.empty(2, 6, 4), requires_grad=False)
        self.fc2_weight = nn.Parameter(torch.empty(2, 4, 3), requires_grad=False)
        for p in (self.fc1_weight, self.fc2_weight):
            set_weight_attrs(p, {"weight_loader": default_weight_loader})
        self.register_buffer("_expert_map", torch.tensor([0, 1, -1, -1], dtype=torch.int32),
                             persistent=False)
        b = torch.zeros(2, 6)
        b[:, 3:] = 1.0
        self.register_buffer("_fused_w1_bias", b, persistent=False)


def load(model, a, b):
    model.mlp.fc1_weight.weight_loader(model.mlp.fc1_weight, a)
    model.mlp.fc2_weight.weight_loader(model.mlp.fc2_weight, b)


model = nn.Module()
model.mlp = MoE()
record_metadata_for_reloading(model)
load(model, torch.randn(2, 6, 4), torch.randn(2, 4, 3))
mlp = model.mlp
em, bias = mlp._expert_map, mlp._fused_w1_bias
em0, bias0 = em.clone(), bias.clone()
ptrs = (em.data_ptr(), bias.data_ptr())

a1, b1 = torch.randn(2, 6, 4), torch.randn(2, 4, 3)
initialize_layerwise_reload(model)
load(model, a1, b1)
finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
print("layerwise reload: fc1_weight refilled:", torch.equal(mlp.fc1_weight, a1))
print("layerwise reload: _expert_map same object:", mlp._expert_map is em,
      "| same storage:", mlp._expert_map.data_ptr() == ptrs[0],
      "| same value:", torch.equal(mlp._expert_map, em0))
print("layerwise reload: _fused_w1_bias same object:", mlp._fused_w1_bias is bias,
      "| same storage:", mlp._fused_w1_bias.data_ptr() == ptrs[1],
      "| same value:", torch.equal(mlp._fused_w1_bias, bias0))

a2 = torch.randn(2, 6, 4)
get_parameter_for_reload(model, "mlp.fc1_weight").copy_(a2)
print("kernel-format reload: fc1_weight refilled:", torch.equal(mlp.fc1_weight, a2),
      "| buffers unchanged:", torch.equal(mlp._expert_map, em0) and torch.equal(mlp._fused_w1_bias, bias0),
      "| same storage:", (mlp._expert_map.data_ptr(), mlp._fused_w1_bias.data_ptr()) == ptrs)
