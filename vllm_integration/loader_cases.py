"""Cases for parameters that a model's own loader fills around their ``weight_loader``.

The Inkling sink experts and the LongCat n-gram projection are registered parameters that the
model's loader fills by ``.data.copy_`` (``InklingSinkExperts.load_weight``,
``NgramEmbedding.load_weight``), as ``InklingMoE.load_expert_weight`` and
``FlashNgramModel.load_weights`` route them. Each case builds vLLM's real module on CPU and
loads and reloads it through that same method, under vLLM's real layerwise reload. The n-gram
case also loads the embedder tables, which the same loader writes into the child
``oe_embedder.weight`` by a ``.data[...] =`` slice store (stale too, and no static finding: the
rule looks only at a class's own parameters); ``word_embeddings`` is the base model's table,
which this loader never loads.
"""

from __future__ import annotations

import types

import torch
from torch import nn

from vllm_integration import case_base as b

__all__ = ["loader_cases"]

_SINKS, _D_MODEL, _D_MLP = 2, 16, 32
_SINK_SHAPES = {"w13_weight": ((_SINKS, 2 * _D_MLP, _D_MODEL), torch.bfloat16),
                "w2_weight": ((_SINKS, _D_MODEL, _D_MLP), torch.bfloat16)}
_VOCAB, _HIDDEN = 64, 16
_NGRAM = types.SimpleNamespace(vocab_size=_VOCAB, ngram_vocab_size_ratio=1, emb_split_num=2,
                               emb_neighbor_num=2, pad_token_id=0, eos_token_id=1,
                               hidden_size=_HIDDEN, torch_dtype=torch.bfloat16)
_OE_DIM = _HIDDEN // 2  # emb_split_num * (emb_neighbor_num - 1) embedders


def _sink_layer(qualified: str):  # noqa: ANN202 - a factory of vLLM's module
    return lambda: b.load_class(qualified)(_SINKS, _D_MODEL, _D_MLP)


def _ngram_layer() -> nn.Module:
    cls = b.load_class("vllm.model_executor.models.longcat_flash_ngram.NgramEmbedding")
    return cls(_NGRAM, nn.Embedding(_VOCAB, _HIDDEN))


def loader_cases() -> list[b.VllmCase]:
    """One case per class whose parameters its model loads around ``weight_loader``."""
    sinks = [(f"inkling-{vendor}-sink-experts", f"vllm.models.inkling.{vendor}.moe"
              ".InklingSinkExperts") for vendor in ("amd", "nvidia")]
    return [
        *(b.VllmCase(name, (qualified,), _SINK_SHAPES, layer=_sink_layer(qualified),
                     load=lambda layer, key, w: layer.load_weight(key, w),
                     patch=b.vllm_runtime)
          for name, qualified in sinks),
        b.VllmCase("longcat-ngram-projection",
                   ("vllm.model_executor.models.longcat_flash_ngram.NgramEmbedding",),
                   {**{f"ngram_embeddings.embedders.{i}.weight": ((_VOCAB + 2 * i + 1,
                                                                   _OE_DIM), torch.bfloat16)
                       for i in range(2)},
                    **{f"ngram_embeddings.post_projs.{i}.weight": ((_HIDDEN, _OE_DIM),
                                                                   torch.bfloat16)
                       for i in range(2)}},
                   layer=_ngram_layer, load=lambda layer, key, w: layer.load_weight(key, w),
                   patch=b.vllm_runtime),
    ]
