"""CPU check (review14, recall v11): a drafter of the DFlash pattern
(vllm/model_executor/models/qwen3_dflash.py:540-558 and :892) under vLLM 0.33.0's
layerwise reload.

The drafter's own load_weights ends by building its precompute buffers: a
``torch.cat`` of the loaded projection weights (``_fused_kv_weight``) and an
alias of the rotary module's non-persistent ``cos_sin_cache`` buffer
(``_rope_cos_sin_cache``). The rotary module has nothing to load. Questions:
after a layerwise reload (the drafter weight-update lifecycle: initialize,
load_weights, finalize), is the fused copy new storage, and what does the rope
alias point at?

    PYTHONPATH=. python3 benchmarks/results/review14/cpu_check_dflash_rope_alias_toy.py
"""

from __future__ import annotations

import torch
from torch import nn
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader


class Rotary(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cos_sin_cache", torch.arange(8.0).reshape(4, 2), persistent=False)


class Proj(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(4, 3), requires_grad=False)


class Drafter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = Proj()
        self.rotary_emb = Rotary()

    def _build(self) -> None:
        self._fused_kv_weight = torch.cat([self.proj.weight[2:]], dim=0)
        self._rope_cos_sin_cache = self.rotary_emb.cos_sin_cache

    def load_weights(self, weights):
        for name, w in weights:
            param = self.get_parameter(name)
            getattr(param, "weight_loader", default_weight_loader)(param, w)
        self._build()


class _Cfg:
    dtype = torch.float32
    quantization = None


model = Drafter()
record_metadata_for_reloading(model)
model.load_weights([("proj.weight", torch.full((4, 3), 1.0))])
fused0 = model._fused_kv_weight
rope_kept = model.rotary_emb.cos_sin_cache
print("after load: fused", fused0[0, 0].item(), "ptr", fused0.data_ptr(),
      "| rope alias is the kept buffer:", model._rope_cos_sin_cache is rope_kept)

initialize_layerwise_reload(model)
model.load_weights([("proj.weight", torch.full((4, 3), 2.0))])
finalize_layerwise_reload(model, _Cfg())
fused1 = model._fused_kv_weight
print("after layerwise reload: fused", fused1[0, 0].item(), "same storage as before:",
      fused1.data_ptr() == fused0.data_ptr(), "| old fused still", fused0[0, 0].item())
rope = model._rope_cos_sin_cache
print("rope alias: is_meta", rope.is_meta, "| is the kept buffer:", rope is rope_kept,
      "| module buffer is the kept one again:", model.rotary_emb.cos_sin_cache is rope_kept)
