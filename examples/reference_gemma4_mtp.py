"""Reference Gemma4 MTP drafter: the TP-gathered lm_head cache, like vLLM 0.33.0.

Mirrors ``vllm/model_executor/models/gemma4_mtp.py::Gemma4MTP`` with vLLM's owners and names:
``lm_head.weight`` (tied to ``model.embed_tokens.weight``) is this rank's vocab shard
``[V_pad / tp, H]``; with centroid masking (``masked_embedding``) and TP > 1,
``_get_full_lm_head_weight`` caches ``_stable_full_lm_head_weight =
all_gather(lm_head.weight, dim=0)[:vocab].contiguous()`` ``[vocab, H]``, and ``load_weights``
drops the cache (``None``): the next ``compute_logits`` allocates a new one, so a graph captured
with the old one reads freed memory. The matching spec is in ``specs/vllm_drafters_gathered.yaml``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from derivgraph.tools.loading import load_in_place

__all__ = ["Gemma4MTP", "build_gemma4_mtp", "make_gemma4_mtp_weights"]

VOCAB, VOCAB_PADDED, HIDDEN = 250, 256, 16


class Gemma4MTPMaskedEmbedder(nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, hidden: torch.Tensor, lm_head_weight: torch.Tensor) -> torch.Tensor:
        return hidden @ lm_head_weight.T


class VocabParallelEmbedding(nn.Module):
    def __init__(self, rows: int, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, hidden), requires_grad=False)


class Gemma4MultiTokenPredictor(nn.Module):
    def __init__(self, rows: int, hidden: int):
        super().__init__()
        self.embed_tokens = VocabParallelEmbedding(rows, hidden)


class Gemma4MTP(nn.Module):
    """The drafter's lm_head path (tied embeddings, centroid masking on)."""

    def __init__(self, tp_group: Any = None):
        super().__init__()
        self.tp_group = tp_group  # vLLM: get_tp_group()
        tp = 1 if tp_group is None else dist.get_world_size(tp_group)
        self.model = Gemma4MultiTokenPredictor(VOCAB_PADDED // tp, HIDDEN)
        self.lm_head = self.model.embed_tokens  # tie_weights(embed_tokens)
        self.masked_embedding = Gemma4MTPMaskedEmbedder(VOCAB)
        self._stable_full_lm_head_weight: torch.Tensor | None = None

    def _get_full_lm_head_weight(self) -> torch.Tensor:
        if self._stable_full_lm_head_weight is not None:
            return self._stable_full_lm_head_weight
        weight = self.lm_head.weight
        tp = 1 if self.tp_group is None else dist.get_world_size(self.tp_group)
        if tp > 1:
            gathered = [torch.empty_like(weight) for _ in range(tp)]
            dist.all_gather(gathered, weight.contiguous(), group=self.tp_group)
            weight = torch.cat(gathered, 0)
        weight = weight[: self.masked_embedding.vocab_size]
        if tp > 1:
            weight = weight.contiguous()
            self._stable_full_lm_head_weight = weight
        return weight

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.masked_embedding(hidden, self._get_full_lm_head_weight())

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        self._stable_full_lm_head_weight = None
        load_in_place(self, weights)


def make_gemma4_mtp_weights(seed: int, rank: int = 0, tp: int = 1) -> dict[str, torch.Tensor]:
    """This rank's shard of a full checkpoint set by ``seed``."""
    full = torch.randn(VOCAB_PADDED, HIDDEN, generator=torch.Generator().manual_seed(seed))
    rows = VOCAB_PADDED // tp
    return {"model.embed_tokens.weight": full[rank * rows:(rank + 1) * rows].clone()}


def build_gemma4_mtp(weights: dict[str, torch.Tensor], tp_group: Any = None) -> Gemma4MTP:
    """A cold start: construct, load, and run the first compute_logits (which fills the cache)."""
    model = Gemma4MTP(tp_group)
    model.load_weights(weights)
    model.compute_logits(torch.zeros(1, HIDDEN))
    return model
