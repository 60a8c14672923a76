"""CPU checks (review15, recall v12): two patterns of the v12 draw under vLLM 0.33.0's
layerwise reload (initialize_layerwise_reload, the model's load_weights,
finalize_layerwise_reload) and a kernel-format reload (get_parameter_for_reload(...).copy_).

A. Muse Spark gated residual (vllm/models/muse_spark/common/layers.py:265-274, called at the
   end of the model's load_weights, nvidia/model.py:1924): ``register_buffer("beta", ...)``
   of coefficients computed from the loaded ``gate`` parameter. Is ``beta`` new storage
   after a layerwise reload, and stale after a kernel-format reload?
B. XPress refiner head (vllm/model_executor/models/qwen3_xpress.py:86-94, 209-226, 354-357):
   ``mix_L`` is a direct parameter of the head that the loader skips and ``fold_from_raw_``
   fills; ``build_fused_buffers`` stores a dict of contiguous copies, built at the end of
   load_weights. Is the dict's storage new after a layerwise reload, and what does its
   ``mix_kjc`` entry hold?

    PYTHONPATH=. python3 benchmarks/results/review15/cpu_check_v12_toys.py
"""

from __future__ import annotations

import torch
from torch import nn
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader


class _Cfg:
    dtype = torch.float32
    quantization = None


def _load(model: nn.Module, weights) -> None:
    for name, w in weights:
        param = model.get_parameter(name)
        getattr(param, "weight_loader", default_weight_loader)(param, w)


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Parameter(torch.empty(4), requires_grad=False)

    def materialize_coefficients(self) -> None:
        w = self.gate.detach().float() / 0.3
        beta = torch.sigmoid(w)
        self.register_buffer("beta", beta.contiguous(), persistent=False)


class MuseToy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conn = Gate()

    def load_weights(self, weights) -> None:
        _load(self, weights)
        self.conn.materialize_coefficients()


print("A. Muse Spark gated residual beta")
m = MuseToy()
record_metadata_for_reloading(m)
m.load_weights([("conn.gate", torch.zeros(4))])
beta0 = m.conn.beta
print("  after load: beta", round(beta0[0].item(), 4), "ptr kept")
initialize_layerwise_reload(m)
m.load_weights([("conn.gate", torch.ones(4))])
finalize_layerwise_reload(m, _Cfg())
beta1 = m.conn.beta
print("  after layerwise reload: beta", round(beta1[0].item(), 4),
      "| same object:", beta1 is beta0, "| same storage:", beta1.data_ptr() == beta0.data_ptr(),
      "| old storage still", round(beta0[0].item(), 4))
get_parameter_for_reload(m, "conn.gate").copy_(torch.full((4,), -2.0))
expect = torch.sigmoid(torch.tensor(-2.0) / 0.3).item()
print("  after kernel-format reload (gate=-2): beta", round(m.conn.beta[0].item(), 4),
      "| recomputed would be", round(expect, 4))


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.in_proj = nn.Linear(2, 2, bias=False)
        self.mix_L = nn.Parameter(torch.eye(2).expand(2, -1, -1).contiguous())
        self._fused_buf = None

    def fold_from_raw_(self, raw_l: torch.Tensor) -> None:
        with torch.no_grad():
            self.mix_L.copy_(raw_l + torch.eye(2))

    def build_fused_buffers(self) -> None:
        self._fused_buf = {
            "w_t": self.in_proj.weight.detach().t().contiguous(),
            "mix_kjc": self.mix_L.detach().permute(1, 2, 0).contiguous(),
        }


class XPressToy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = Head()

    def load_weights(self, weights) -> None:
        raw = None
        rest = []
        for name, w in weights:
            if name == "head.mix.L":
                raw = w
            else:
                rest.append((name, w))
        _load(self, rest)
        self.head.fold_from_raw_(raw)
        self.head.build_fused_buffers()


print("B. XPress refiner head _fused_buf")
x = XPressToy()
record_metadata_for_reloading(x)
x.load_weights([("head.in_proj.weight", torch.full((2, 2), 1.0)),
                ("head.mix.L", torch.full((2, 2, 2), 1.0))])
buf0 = x.head._fused_buf
print("  after load: w_t", buf0["w_t"][0, 0].item(), "| mix_kjc", buf0["mix_kjc"][0, 0, 0].item())
initialize_layerwise_reload(x)
x.load_weights([("head.in_proj.weight", torch.full((2, 2), 2.0)),
                ("head.mix.L", torch.full((2, 2, 2), 5.0))])
finalize_layerwise_reload(x, _Cfg())
buf1 = x.head._fused_buf
print("  after layerwise reload: w_t", buf1["w_t"][0, 0].item(), "| same storage:",
      buf1["w_t"].data_ptr() == buf0["w_t"].data_ptr(), "| old w_t still", buf0["w_t"][0, 0].item())
print("  mix_kjc is_meta:", buf1["mix_kjc"].is_meta, "| kept mix_L[0,0,0]:",
      x.head.mix_L[0, 0, 0].item(), "(6.0 if the new raw L had been folded)")
