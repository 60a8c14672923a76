"""Attention-side cases for undeclared error classes: Kimi-K3's prepared decode containers
and vLLM's MLA impls (sparse FlashInfer, FlashInfer, Tokenspeed), built on layers whose
KV-cache scales go through vLLM's own ``BaseKVCacheMethod`` (which makes the host floats
``_k_scale_float`` etc.).

The Kimi-K3 containers are built as the specialized-decode provider builds them
(``runtime/providers.py:84,96``), from a view of the case layer's own parameters, once after
the first load: ``SpecializedDecode.build_providers`` runs once, before KV binding and graph
capture (``runtime/decode.py:125``), and no reload path calls it again.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import SimpleNamespace

import torch
from torch import nn

from vllm_integration.class_attempts import attention_args, kv_b_proj, mla_args

__all__ = ["KDA", "KV_SCALES", "MLA", "decode_step", "kv_scaled_layer", "mla_layer",
           "prepare_mqa", "prepared_kda", "prepared_mla"]

KDA = {"conv1d_weight": ((3 * 256, 1, 4), torch.bfloat16), "dt_bias": ((256,), torch.float32),
        "A_log": ((2,), torch.float32), "f_b_proj_weight": ((256, 16), torch.bfloat16),
        "o_norm_weight": ((128,), torch.bfloat16)}
MLA = {"W_UK_T": ((2, 128, 512), torch.bfloat16), "W_UV": ((2, 512, 128), torch.bfloat16),
        "q_a_layernorm_weight": ((64,), torch.bfloat16),
        "kv_a_layernorm_weight": ((512,), torch.bfloat16),
        "q_b_proj_weight": ((2 * 192, 64), torch.bfloat16),
        "_q_scale_inv": ((1,), torch.float32), "_k_scale_inv": ((1,), torch.float32)}


def prepared_kda(layer: nn.Module) -> None:
    """What the specialized-decode provider does (providers.py:84), on the layer's tensors."""
    from vllm.models.kimi_k3.nvidia.specialized_decode.cutedsl.kda.prepared import PreparedKda

    view = SimpleNamespace(
        conv1d=SimpleNamespace(weight=layer.conv1d_weight, bias=None), dt_bias=layer.dt_bias,
        A_log=layer.A_log, f_b_proj=SimpleNamespace(weight=layer.f_b_proj_weight),
        o_norm=SimpleNamespace(weight=layer.o_norm_weight, eps=1e-6), gate_lower_bound=-5.0)
    layer.core = PreparedKda(view, {}, False)


DENSE_DOWN = {"down_proj_weight": ((64, 96), torch.bfloat16)}
"""A dense MLP's down projection [hidden, intermediate] whose K needs padding to 128."""


def prepared_projection(layer: nn.Module) -> None:
    """What ``PreparedDenseMLP.__init__`` does with the down projection (dense.py:61-72): pad K
    to a multiple of 128 once, hand the copy to vLLM's ``PreparedProjection`` (its ``prepare``
    compiles a GPU kernel, so it is not called)."""
    from vllm.models.kimi_k3.nvidia.specialized_decode.cutedsl.gemm.projection import (
        PreparedProjection,
    )

    down = layer.down_proj_weight
    hidden = down.shape[1]
    padded = (hidden + 127) // 128 * 128
    down = torch.nn.functional.pad(down.detach(), (0, padded - hidden))
    layer.down = PreparedProjection(down, {})


def kv_scaled_layer(shapes: dict[str, tuple[tuple[int, ...], torch.dtype]]) -> nn.Module:
    """Parameters of ``shapes`` plus an attention layer's KV-cache scales: vLLM's
    BaseKVCacheMethod turns the loaded scales into the host floats ``_k_scale_float`` etc."""
    from vllm.model_executor.layers.attention.attention import set_default_quant_scales
    from vllm.model_executor.layers.quantization.kv_cache import BaseKVCacheMethod
    from vllm.model_executor.model_loader.weight_utils import default_weight_loader
    from vllm.model_executor.utils import set_weight_attrs

    layer = nn.Module()
    for name, (shape, dtype) in shapes.items():
        p = nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)
        set_weight_attrs(p, {"weight_loader": default_weight_loader})
        layer.register_parameter(name, p)
    layer.kv_cache_dtype = "fp8"
    set_default_quant_scales(layer, register_buffer=True)
    layer.quant_method = BaseKVCacheMethod(None)
    layer.quant_method.create_weights(layer)
    return layer


def prepared_mla(layer: nn.Module) -> None:
    """What the specialized-decode provider does (providers.py:96), on the layer's tensors
    and the host scale floats vLLM's KV-cache method made."""
    from vllm.models.kimi_k3.nvidia.specialized_decode.cutedsl.mla.prepared import PreparedMla

    view = SimpleNamespace(
        W_UK_T=layer.W_UK_T, W_UV=layer.W_UV, _q_scale_inv=layer._q_scale_inv,
        _k_scale_inv=layer._k_scale_inv, q_a_layernorm=SimpleNamespace(
            weight=layer.q_a_layernorm_weight),
        kv_a_layernorm=SimpleNamespace(weight=layer.kv_a_layernorm_weight),
        q_b_proj=SimpleNamespace(weight=layer.q_b_proj_weight),
        _k_scale_float=layer._k_scale_float, scale=0.1, _q_scale_float=layer._q_scale_float,
        rms_norm_eps=1e-6)
    layer.core = PreparedMla(view, {1: 16}, torch.empty(64, 2, 576, dtype=torch.uint8))


def mla_layer(qualified: str) -> Callable[[], nn.Module]:
    """An MLA attention layer's KV-cache scales and vLLM's MLA impl ``qualified`` (built as
    its backend builds it, on an fp8 KV cache)."""
    def make() -> nn.Module:
        module, _, name = qualified.rpartition(".")
        layer = kv_scaled_layer({})
        layer.impl = getattr(importlib.import_module(module), name)(
            **attention_args("fp8"), **mla_args, kv_b_proj=kv_b_proj(False))
        return layer

    return make


def decode_step(metadata: str, q_dtype: torch.dtype) -> Callable[[nn.Module], None]:
    """One decode step of the impl's ``forward_mqa``: one request, one token, one KV block,
    vLLM's own metadata dataclasses (``metadata``: the backend's metadata class, whose
    ``decode`` field type is looked up beside it). The impls fill their lazy scale caches
    before the first step that needs a GPU (a CUDA workspace), which is where it stops."""
    def step(layer: nn.Module) -> None:
        module, _, name = metadata.rpartition(".")
        mod = importlib.import_module(module)
        meta_cls = getattr(mod, name)
        decode_cls = getattr(mod, name.replace("Metadata", "DecodeMetadata"))
        one = torch.ones(1, dtype=torch.int32)
        decode = decode_cls(block_table=torch.zeros(1, 1, dtype=torch.int32), seq_lens=one,
                            dcp_tot_seq_lens=None)
        md = meta_cls(num_reqs=1, max_query_len=1, max_seq_len=1, num_actual_tokens=1,
                      query_start_loc=torch.tensor([0, 1], dtype=torch.int32),
                      slot_mapping=torch.zeros(1, dtype=torch.int64), num_decodes=1,
                      num_decode_tokens=1, num_prefills=0, decode=decode)
        latent = mla_args["kv_lora_rank"] + mla_args["qk_rope_head_dim"]
        q = torch.zeros(1, attention_args("fp8")["num_heads"], latent, dtype=q_dtype)
        layer.impl.forward_mqa(q, torch.zeros(1, 64, latent, dtype=torch.uint8), md, layer)

    return step


def prepare_mqa(layer: nn.Module) -> None:
    """What the sparse MLA forward calls before its kernel (the lazy bmm scales)."""
    layer.impl._prepare_mqa_kernel(layer, torch.device("cpu"))


KV_SCALES = {name: ((), torch.float32) for name in ("q_scale", "k_scale", "v_scale",
                                                       "prob_scale")}
