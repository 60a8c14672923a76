"""Reference MLA attention: ``W_UV`` / ``W_UK_T`` absorbed from ``kv_b_proj`` like vLLM 0.33.0.

Mirrors ``vllm/model_executor/layers/attention/mla_attention.py`` (``MLAAttention.
process_weights_after_loading``, ``split_kv_b_proj``) with vLLM's owners and names:

* ``kv_b_proj.weight`` ``[N * (P + V), L]`` (unquantized), or FP8 with 128x128 block scales
  ``kv_b_proj.weight_scale_inv`` (``Fp8LinearMethod`` with ``block_quant``), dequantized to the
  activation dtype;
* ``W_UV = W_UV.transpose(0, 1)`` ``[N, L, V]`` and ``W_UK_T = W_UK.permute(1, 2, 0)``
  ``[N, P, L]``, layer Parameters set with ``replace_parameter``;
* with decode-context-parallel query replication (``dcp_q_replicate``),
  ``W_UK_T_dcp_qrep = all_gather(W_UK_T.contiguous(), dim=0)`` over the DCP group
  (``[dcp * N, P, L]``).

The matching specs are in ``specs/vllm_mla.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from derivgraph.tools.loading import load_in_place

__all__ = ["MLAConfig", "MLAModel", "build_mla_model", "make_mla_weights", "replace_parameter"]


@dataclass(frozen=True)
class MLAConfig:
    kv_lora_rank: int = 256
    num_heads: int = 2
    qk_nope_head_dim: int = 64
    v_head_dim: int = 64
    layers: int = 2
    fp8: bool = False
    act_dtype: torch.dtype = torch.bfloat16
    dcp_q_replicate: bool = False


def replace_parameter(layer: nn.Module, name: str, new: torch.Tensor) -> None:
    """vLLM's ``model_executor.utils.replace_parameter``: keep the Parameter object, copying
    into it when the layout matches, else rebinding ``.data``; register one when none exists."""
    old = getattr(layer, name, None)
    if isinstance(old, nn.Parameter):
        if (old.shape, old.stride(), old.dtype, old.device) == (
                new.shape, new.stride(), new.dtype, new.device):
            old.data.copy_(new)
        else:
            old.data = new
        return
    setattr(layer, name, nn.Parameter(new, requires_grad=False))


class UnquantizedLinearMethod:
    """Like vLLM's: the weight is the checkpoint's, as is."""


class Fp8LinearMethod:
    """Like vLLM's ``Fp8LinearMethod`` with 128x128 block scales (DeepSeek's kv_b_proj)."""

    block_quant = True
    use_marlin = False
    use_deep_gemm = False


class ColumnParallelLinear(nn.Module):
    def __init__(self, out_features: int, in_features: int, fp8: bool):
        super().__init__()
        if fp8:
            self.weight = nn.Parameter(torch.empty(out_features, in_features,
                                                   dtype=torch.float8_e4m3fn),
                                       requires_grad=False)
            self.weight_scale_inv = nn.Parameter(
                torch.empty(-(-out_features // 128), -(-in_features // 128)), requires_grad=False)
            self.weight_block_size = [128, 128]
            self.quant_method: Any = Fp8LinearMethod()
        else:
            self.weight = nn.Parameter(torch.empty(out_features, in_features,
                                                   dtype=torch.bfloat16), requires_grad=False)
            self.quant_method = UnquantizedLinearMethod()


def dequant_weights(kv_b_proj: ColumnParallelLinear, out_dtype: torch.dtype) -> torch.Tensor:
    """``get_and_maybe_dequant_weights``: the weight in ``[out, in]`` layout, in ``out_dtype``."""
    w = kv_b_proj.weight
    if isinstance(kv_b_proj.quant_method, UnquantizedLinearMethod):
        return w.to(out_dtype)
    s = kv_b_proj.weight_scale_inv.to(torch.float32)
    s = s.repeat_interleave(128, 0)[: w.shape[0]].repeat_interleave(128, 1)[:, : w.shape[1]]
    return (w.to(torch.float32) * s).to(out_dtype)


class MLAAttention(nn.Module):
    """The MLA layer's reload-relevant part, with vLLM's attribute names."""

    def __init__(self, cfg: MLAConfig):
        super().__init__()
        self.kv_lora_rank, self.num_heads = cfg.kv_lora_rank, cfg.num_heads
        self.qk_nope_head_dim, self.v_head_dim = cfg.qk_nope_head_dim, cfg.v_head_dim
        self.kv_b_proj = ColumnParallelLinear(
            cfg.num_heads * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank, cfg.fp8)
        self.dcp_q_replicate = cfg.dcp_q_replicate
        self.W_UK_T_dcp_qrep: torch.Tensor | None = None
        self.is_amx_bmm_enabled = False
        self.is_aiter_triton_fp8_bmm_enabled = False
        self.is_aiter_triton_fp4_bmm_enabled = False
        self.dcp_group: Any = None  # vLLM: get_dcp_group(); here a torch.distributed group

    def process_weights_after_loading(self, act_dtype: torch.dtype) -> None:
        weight = dequant_weights(self.kv_b_proj, act_dtype).T
        weight = weight.view(self.kv_lora_rank, self.num_heads,
                             self.qk_nope_head_dim + self.v_head_dim)
        W_UK, W_UV = weight.split([self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        replace_parameter(self, "W_UV", W_UV.transpose(0, 1))
        replace_parameter(self, "W_UK_T", W_UK.permute(1, 2, 0))
        if self.dcp_q_replicate:
            local = self.W_UK_T.contiguous()
            if self.dcp_group is None:  # a DCP group of one: vLLM returns the input
                gathered = local
            else:
                size = dist.get_world_size(self.dcp_group)
                gathered = torch.empty((size * local.shape[0], *local.shape[1:]),
                                       dtype=local.dtype)
                dist.all_gather_into_tensor(gathered, local, group=self.dcp_group)
            replace_parameter(self, "W_UK_T_dcp_qrep", gathered)

    def forward(self, q_nope: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        """Decode: q absorbed into latent space by W_UK_T, output back to v by W_UV."""
        ql = torch.bmm(q_nope.transpose(0, 1), self.W_UK_T)  # [N, T, L]
        attn = torch.softmax(ql @ latent.T.to(ql.dtype), dim=-1) @ latent.to(ql.dtype)
        return torch.bmm(attn, self.W_UV).transpose(0, 1)  # [T, N, V]


class MLADecoderLayer(nn.Module):
    def __init__(self, cfg: MLAConfig):
        super().__init__()
        self.self_attn = nn.Module()
        self.self_attn.mla_attn = MLAAttention(cfg)


class MLAModel(nn.Module):
    """A tiny DeepSeek-style stack: ``layers.i.self_attn.mla_attn`` like vLLM's."""

    def __init__(self, cfg: MLAConfig = MLAConfig(), dcp_group: Any = None):
        super().__init__()
        self.cfg = cfg
        self.layers = nn.ModuleList(MLADecoderLayer(cfg) for _ in range(cfg.layers))
        for attn in self.attention_layers():
            attn.dcp_group = dcp_group

    def attention_layers(self) -> list[MLAAttention]:
        return [m for m in self.modules() if isinstance(m, MLAAttention)]

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        """Weight loaders copy into the kept checkpoint Parameters."""
        load_in_place(self, weights)

    def process_weights_after_loading(self) -> None:
        """Deferred attention post-load: on the live layer, as vLLM's layerwise reload does."""
        for attn in self.attention_layers():
            attn.process_weights_after_loading(self.cfg.act_dtype)

    def forward(self, q_nope: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
        return torch.stack([a(q_nope, latent) for a in self.attention_layers()])


def make_mla_weights(cfg: MLAConfig, seed: int, rank: int = 0) -> dict[str, torch.Tensor]:
    """A checkpoint of ``kv_b_proj`` (and its block scales) set by ``seed`` (and ``rank``)."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    rows = cfg.num_heads * (cfg.qk_nope_head_dim + cfg.v_head_dim)
    out = {}
    for i in range(cfg.layers):
        prefix = f"layers.{i}.self_attn.mla_attn.kv_b_proj."
        w = torch.randn(rows, cfg.kv_lora_rank, generator=g) * 0.5
        if cfg.fp8:
            out[prefix + "weight"] = w.to(torch.float8_e4m3fn)
            out[prefix + "weight_scale_inv"] = 0.01 + 0.02 * torch.rand(
                -(-rows // 128), -(-cfg.kv_lora_rank // 128), generator=g)
        else:
            out[prefix + "weight"] = w.to(torch.bfloat16)
    return out


def build_mla_model(weights: dict[str, torch.Tensor], cfg: MLAConfig = MLAConfig(),
                    dcp_group: Any = None) -> MLAModel:
    """A cold start: construct, load, post-load."""
    model = MLAModel(cfg, dcp_group)
    model.load_weights(weights)
    model.process_weights_after_loading()
    return model
