"""Tries of vLLM's real code for the undeclared error classes outside the layer harness.

Attention impls, prepared decode containers and model-level post-load steps: each function
builds the class the static finding names (or the module it lives in) and runs the code that
makes the store, as far as it goes on this machine. What stopped it is recorded by
:func:`vllm_integration.blockers.attempt`; a function that ran through means the class needs a
case of its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch
from torch import nn

from vllm_integration import case_base as b

__all__ = ["ATTEMPTS", "attention_args", "kv_b_proj", "mla_args"]

# the head dims TokenspeedMLAImpl asserts (192, 128)
mla_args = _MLA = dict(q_lora_rank=None, kv_lora_rank=512, qk_nope_head_dim=128,
                       qk_rope_head_dim=64, qk_head_dim=192, v_head_dim=128)


def attention_args(kv_cache_dtype: str) -> dict:
    return dict(num_heads=2, head_size=64, scale=0.125, num_kv_heads=2, alibi_slopes=None,
                sliding_window=None, kv_cache_dtype=kv_cache_dtype, logits_soft_cap=None,
                attn_type="decoder", kv_sharing_target_layer_name=None)


def kv_b_proj(fp8: bool) -> nn.Module:
    """kv_b_proj of an MLA layer: (heads * (nope + v), kv_lora_rank)."""
    out = 2 * (_MLA["qk_nope_head_dim"] + _MLA["v_head_dim"])
    proj = nn.Module()
    weight = torch.randn(out, _MLA["kv_lora_rank"], generator=torch.Generator().manual_seed(0))
    proj.weight = nn.Parameter(weight.to(torch.float8_e4m3fn if fp8 else torch.bfloat16),
                               requires_grad=False)
    if fp8:
        proj.weight_block_size = [128, 128]
        blocks = (-(-out // 128), -(-_MLA["kv_lora_rank"] // 128))
        proj.weight_scale_inv = nn.Parameter(torch.ones(blocks), requires_grad=False)
    return proj


def _forward(impl: object) -> None:
    """The lazy caches are filled inside forward, after it reads the attention metadata."""
    raise NotImplementedError(
        f"{type(impl).__name__} was constructed on CPU; the cache is filled in its forward, "
        "which needs the backend's attention metadata and KV cache (not built by this try)")


def _flashinfer_impl() -> None:
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    with b.vllm_runtime():
        _forward(FlashInferImpl(**attention_args("fp8")))


def _import(module: str) -> Callable[[], None]:
    def run() -> None:
        importlib.import_module(module)
        raise NotImplementedError(f"{module} imports on CPU; building its model needs a full "
                                  "model config, which this attempt does not build")

    return run


#: class qualified name -> (case name, the try)
ATTEMPTS: dict[str, tuple[str, Callable[[], None]]] = {
    "vllm.v1.attention.backends.flashinfer.FlashInferImpl":
        ("attention-flashinfer", _flashinfer_impl),
    "vllm.models.deepseek_v4.amd.model.DeepseekV4HeterogeneousSharedRoutedExperts":
        ("deepseek-v4-amd-shared-expert", _import("vllm.models.deepseek_v4.amd.model")),
    "vllm.models.deepseek_v4.amd.rocm.DeepseekV4ROCMAiterMLAAttention":
        ("deepseek-v4-amd-wo-a", _import("vllm.models.deepseek_v4.amd.rocm")),
    "vllm.models.deepseek_v4.amd.mono_decode.MonoDecodeLayer":
        ("deepseek-v4-amd-mono-decode", _import("vllm.models.deepseek_v4.amd.model")),
}
