"""Reference GLM-5-next caches built on the first forward, like vLLM 0.33.0.

Mirrors ``vllm/models/glm5next/common/``'s owners and names at tiny sizes:

- ``attention.py::Indexer``: ``wk_weights_proj.weight`` ``[head_dim + n_head, hidden]`` (bf16,
  the fused wk | weights_proj GEMM); the first forward caches the head gate
  ``_wp_fp32 = weight[head_dim:, :].t().contiguous().float()``.
- ``kda.py::Glm5NextLinearAttention``: ``q_conv1d`` / ``k_conv1d`` / ``v_conv1d`` ``.weight``
  ``[P, 1, C]`` (float32); the first forward caches
  ``_merged_conv_weight = cat(w.view(P, C) for q, k, v).contiguous()``.

Both caches are built once and never rebuilt, so an in-place reload leaves them stale. The
spec is ``specs/vllm_glm5next.yaml``.
"""

from __future__ import annotations

import torch
from torch import nn

from derivgraph.tools.loading import load_in_place  # noqa: F401  (re-exported for the tests)

__all__ = ["Glm5NextLinearAttention", "Indexer", "build_glm5next", "load_in_place",
           "make_glm5next_weights"]

HIDDEN, HEAD_DIM, N_HEAD = 32, 16, 8
P, C = 24, 4


class _Linear(nn.Module):
    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)


class Indexer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head_dim, self.n_head = HEAD_DIM, N_HEAD
        self.wk_weights_proj = _Linear((HEAD_DIM + N_HEAD, HIDDEN), torch.bfloat16)
        self._wp_fp32: torch.Tensor | None = None

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self._wp_fp32 is None:  # vLLM: "Cache it after weights are loaded."
            self._wp_fp32 = (self.wk_weights_proj.weight.data[self.head_dim:, :]
                             .t().contiguous().float())
        return torch.mm(hidden_states.float(), self._wp_fp32)


class Glm5NextLinearAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.local_projection_size, self.conv_size = P, C
        self.q_conv1d = _Linear((P, 1, C), torch.float32)
        self.k_conv1d = _Linear((P, 1, C), torch.float32)
        self.v_conv1d = _Linear((P, 1, C), torch.float32)
        self._merged_conv_weight: torch.Tensor | None = None

    def forward(self) -> torch.Tensor:
        if self._merged_conv_weight is None:
            def _w(m: nn.Module) -> torch.Tensor:
                return m.weight.view(m.weight.size(0), m.weight.size(2))

            self._merged_conv_weight = torch.cat(
                [_w(self.q_conv1d), _w(self.k_conv1d), _w(self.v_conv1d)], dim=0).contiguous()
        return self._merged_conv_weight


def make_glm5next_weights(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {"indexer.wk_weights_proj.weight":
           torch.randn(HEAD_DIM + N_HEAD, HIDDEN, generator=g).bfloat16()}
    for n in ("q", "k", "v"):
        out[f"linear_attn.{n}_conv1d.weight"] = torch.randn(P, 1, C, generator=g)
    return out



def build_glm5next(weights: dict[str, torch.Tensor]) -> nn.Module:
    """A cold start: load, then one forward builds both caches."""
    root = nn.Module()
    root.indexer = Indexer()
    root.linear_attn = Glm5NextLinearAttention()
    load_in_place(root, weights)
    root.indexer(torch.zeros(1, HIDDEN))
    root.linear_attn()
    return root
