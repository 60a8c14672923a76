"""Position 24: models/beam/nvidia/dflash2.py:392 ``self._context_k_norm_weight = torch.stack(...)``.

Runs vLLM's real ``DFlash2BeamModel.build_context_kv_weights`` on a toy drafter whose
``load_weights`` ends like ``DFlash2BeamForCausalLM.load_weights`` (load, then
``build_context_kv_weights()``), and drives the drafter's layerwise reload with vLLM's real
functions; then a kernel-format reload of ``k_norm.weight``.

Question: where does ``_context_k_norm_weight`` point after each reload?
"""

from __future__ import annotations

import torch
from torch import nn

from probe_lib import initial_load, kernel_format_reload, layerwise_reload, ptr
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.models.beam.nvidia.dflash2 import DFlash2BeamModel

H, Q, KV, L = 16, 8, 4, 2


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(KV), requires_grad=False)


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_size = Q
        self.qkv_proj = nn.Linear(H, Q + 2 * KV, bias=False)
        self.k_norm = Norm()


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attn()


class Drafter(nn.Module):
    build_context_kv_weights = DFlash2BeamModel.build_context_kv_weights

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(L)])

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
        self.build_context_kv_weights()


def ckpt(model, seed):
    g = torch.Generator().manual_seed(seed)
    return {n: torch.rand(p.shape, generator=g) for n, p in model.named_parameters()}


if __name__ == "__main__":
    m = Drafter()
    c0, c1 = ckpt(m, 0), ckpt(m, 1)
    initial_load(m, c0)
    t0 = m._context_k_norm_weight
    p0 = ptr(t0)
    layerwise_reload(m, c1)
    t1 = m._context_k_norm_weight
    stacked1 = torch.stack([c1[f"layers.{i}.self_attn.k_norm.weight"] for i in range(L)])
    print("layerwise: rebound:", t1 is not t0, "| storage moved:", ptr(t1) != p0,
          "| new value == ckpt1:", torch.equal(t1, stacked1),
          "| old (captured) still ckpt0:",
          torch.equal(t0, torch.stack([c0[f"layers.{i}.self_attn.k_norm.weight"] for i in range(L)])))
    new = torch.full((KV,), 7.0)
    kernel_format_reload(m, {"layers.0.self_attn.k_norm.weight": new})
    print("kernel-format: k_norm refilled:", torch.equal(m.layers[0].self_attn.k_norm.weight, new),
          "| stacked copy stale:", torch.equal(m._context_k_norm_weight, stacked1))
