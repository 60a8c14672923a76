"""Reference LiLiCorr speculator head: inference buffers rebuilt after every load, like vLLM 0.33.0.

Mirrors ``vllm/model_executor/models/lilicorr.py::LiLiCorrHead`` (owners and names) at tiny
sizes: ``out_head`` / ``in_head`` (``ReplicatedLinear`` with bias, ``[factor_dim, hidden]``),
``factor_input_proj`` (``[hidden, 3 * hidden]``, no bias), ``slot_embedding`` (its dtype is the
head's dtype), ``relative_slot_bias`` (``[heads, 2 * block_size - 1]``) and ``same_slot_bias``.
``materialize_inference_buffers`` (vLLM calls it at the end of ``LiLiCorrForCausalLM.
load_weights``) binds fresh tensors on every call, as vLLM's lines 258-324 do:
``_attn_bias`` (the relative-slot attention bias), ``_fused_edge_weight`` / ``_fused_edge_bias``,
the tuple ``_factor_input_splits`` (three contiguous column blocks of ``factor_input_proj``),
``_rank_frac_col`` and ``_is_top1_col`` (constants of ``candidate_topk``). ``materialize=``
takes vLLM's own function so a test runs vLLM's code. The spec is ``specs/vllm_lilicorr.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from derivgraph.tools.loading import load_in_place

__all__ = ["LiLiCorrHead", "build_lilicorr", "load_lilicorr", "make_lilicorr_weights",
           "reference_attention_bias", "reference_materialize"]

HIDDEN, FACTOR_DIM, BLOCK, TOPK, HEADS = 16, 8, 4, 2, 2


def reference_attention_bias(head: LiLiCorrHead, device: torch.device,
                             dtype: torch.dtype) -> torch.Tensor:
    """Like vLLM's ``_build_attention_bias``: relative-slot bias plus the same-slot bias."""
    slot_ids = torch.arange(head.num_candidate_slots, device=device,
                            dtype=torch.long).repeat_interleave(head.candidate_topk)
    rel = slot_ids.view(-1, 1) - slot_ids.view(1, -1)
    bias = head.relative_slot_bias[:, rel + head.block_size - 1]
    same_slot = slot_ids.view(-1, 1) == slot_ids.view(1, -1)
    bias = bias + same_slot.unsqueeze(0).to(dtype=bias.dtype) * head.same_slot_bias.view(-1, 1, 1)
    return bias.to(device=device, dtype=dtype).contiguous()


def reference_materialize(head: LiLiCorrHead, device: torch.device, dtype: torch.dtype) -> None:
    """Like vLLM's ``materialize_inference_buffers``: every buffer a new tensor, every call."""
    topk, hdim = head.candidate_topk, head.hidden_size
    with torch.no_grad():
        head._attn_bias = reference_attention_bias(head, device, dtype)
        head._fused_edge_weight = torch.cat(
            [head.out_head.weight, head.in_head.weight], dim=0).to(device=device,
                                                                   dtype=dtype).contiguous()
        head._fused_edge_bias = torch.cat(
            [head.out_head.bias, head.in_head.bias], dim=0).to(device=device,
                                                               dtype=dtype).contiguous()
        weight = head.factor_input_proj.weight
        head._factor_input_splits = (weight[:, :hdim].contiguous(),
                                     weight[:, hdim:2 * hdim].contiguous(),
                                     weight[:, 2 * hdim:].contiguous())
        if topk > 1:
            rank_frac = torch.arange(topk, device=device, dtype=torch.float32).view(
                1, 1, topk) / float(topk - 1)
        else:
            rank_frac = torch.zeros(1, 1, topk, device=device, dtype=torch.float32)
        is_top1 = torch.zeros(1, 1, topk, device=device, dtype=torch.float32)
        is_top1[..., 0] = 1.0
        head._rank_frac_col = rank_frac.contiguous()
        head._is_top1_col = is_top1.contiguous()


class LiLiCorrHead(nn.Module):
    def __init__(self, dtype: torch.dtype = torch.bfloat16,
                 materialize: Callable[..., None] | None = None, topk: int = TOPK) -> None:
        super().__init__()
        self.hidden_size, self.factor_dim, self.num_heads = HIDDEN, FACTOR_DIM, HEADS
        self.block_size, self.num_candidate_slots, self.candidate_topk = BLOCK, BLOCK - 1, topk
        self.out_head = nn.Linear(HIDDEN, FACTOR_DIM, dtype=dtype)
        self.in_head = nn.Linear(HIDDEN, FACTOR_DIM, dtype=dtype)
        self.factor_input_proj = nn.Linear(3 * HIDDEN, HIDDEN, bias=False, dtype=dtype)
        self.slot_embedding = nn.Parameter(torch.zeros(1, 1, BLOCK - 1, 1, HIDDEN, dtype=dtype))
        self.relative_slot_bias = nn.Parameter(torch.zeros(HEADS, 2 * BLOCK - 1, dtype=dtype))
        self.same_slot_bias = nn.Parameter(torch.zeros(HEADS, dtype=dtype))
        for p in self.parameters():
            p.requires_grad_(False)
        self._fused_edge_weight: torch.Tensor | None = None
        self._fused_edge_bias: torch.Tensor | None = None
        self._factor_input_splits: tuple[torch.Tensor, ...]
        self._attn_bias: torch.Tensor | None = None
        self._rank_frac_col: torch.Tensor
        self._is_top1_col: torch.Tensor
        self._materialize = materialize or reference_materialize

    def materialize_inference_buffers(self, device: torch.device, dtype: torch.dtype) -> None:
        self._materialize(self, device, dtype)


def make_lilicorr_weights(seed: int, dtype: torch.dtype = torch.bfloat16
                          ) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = {"out_head.weight": (FACTOR_DIM, HIDDEN), "out_head.bias": (FACTOR_DIM,),
              "in_head.weight": (FACTOR_DIM, HIDDEN), "in_head.bias": (FACTOR_DIM,),
              "factor_input_proj.weight": (HIDDEN, 3 * HIDDEN),
              "slot_embedding": (1, 1, BLOCK - 1, 1, HIDDEN),
              "relative_slot_bias": (HEADS, 2 * BLOCK - 1), "same_slot_bias": (HEADS,)}
    return {k: torch.randn(s, generator=g).to(dtype) for k, s in shapes.items()}


def load_lilicorr(root: nn.Module, weights: dict[str, torch.Tensor],
                  materialize: bool = True) -> None:
    """vLLM's load: copy into the Parameters, then ``materialize_inference_buffers`` (skipped for
    an in-place reload that bypasses ``load_weights``)."""
    head = root.lilicorr
    load_in_place(head, weights)
    if materialize:
        p = head.slot_embedding
        head.materialize_inference_buffers(p.device, p.dtype)


def build_lilicorr(weights: dict[str, torch.Tensor], materialize: Any = None,
                   topk: int = TOPK) -> nn.Module:
    root = nn.Module()
    root.lilicorr = LiLiCorrHead(next(iter(weights.values())).dtype, materialize, topk)
    load_lilicorr(root, weights)
    return root
