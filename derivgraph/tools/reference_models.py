"""Reference modules shaped like vLLM's, with post-load steps that reallocate like vLLM's.

No vLLM needed. Each post-load step builds *new* derived tensors every time it runs, exactly the
pattern that breaks captured CUDA graphs after a weight reload:

* :class:`RefMoE` — an FP8-style per-tensor MoE layer. Its quant method's post-load step builds
  a fresh quant config (``g1_alphas = w13_weight_scale * w13_input_scale``,
  ``a1_gscale = 1 / w13_input_scale``, ... held in frozen descriptors like vLLM's
  ``FusedMoEQuantDesc``) and a fresh experts object with CUTLASS-style stride constants
  (``ab_strides1`` and ``c_strides2`` are the same object, as in vLLM).
* :class:`RefAttention` — registers ``_q_scale_inv = reciprocal(q_scale).reshape(1)`` as a new
  non-persistent buffer on every post-load step (like Kimi's MLA).
* :class:`RefDrafter` — stacks every layer's K/V rows of ``qkv_proj.weight`` into a fused
  plain attribute in ``load_weights`` (like the DFlash drafters).

The matching specs are in ``derivgraph/tools/specs/reference.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from derivgraph.tools.loading import load_in_place

__all__ = [
    "RefConfig", "ReferenceModel", "make_weights", "reference_spec_path", "build_reference_model",
]


@dataclass(frozen=True)
class RefConfig:
    vocab: int = 64
    hidden: int = 32
    experts: int = 4
    intermediate: int = 16
    layers: int = 2
    heads: int = 2
    kv_heads: int = 1
    head_dim: int = 8
    drafter_layers: int = 2


def reference_spec_path() -> Path:
    """The YAML specs that declare this module's derived tensors."""
    return Path(__file__).with_name("specs") / "reference.yaml"


# ---- quant config and experts, as vLLM's fused_moe shapes them ---------------------------------

@dataclass(frozen=True)
class QuantDesc:
    """Like vLLM's FusedMoEQuantDesc: a frozen holder of scale tensors."""

    scale: torch.Tensor | None = None
    alpha_or_gscale: torch.Tensor | None = None


@dataclass
class MoEQuantConfig:
    """Like vLLM's FusedMoEQuantConfig: descriptors per operand."""

    _a1: QuantDesc
    _a2: QuantDesc
    _w1: QuantDesc
    _w2: QuantDesc

    @property
    def g1_alphas(self) -> torch.Tensor:
        return self._w1.alpha_or_gscale

    @property
    def g2_alphas(self) -> torch.Tensor:
        return self._w2.alpha_or_gscale

    @property
    def a1_gscale(self) -> torch.Tensor:
        return self._a1.alpha_or_gscale

    @property
    def a2_gscale(self) -> torch.Tensor:
        return self._a2.alpha_or_gscale


class CutlassStyleExperts:
    """Like vLLM's CutlassExpertsFp8: stride constants allocated in ``__init__``."""

    def __init__(self, num_experts: int, hidden: int, intermediate: int, device: torch.device,
                 quant_config: MoEQuantConfig):
        self.quant_config = quant_config
        self.ab_strides1 = torch.full((num_experts,), hidden, dtype=torch.int64, device=device)
        self.ab_strides2 = torch.full((num_experts,), intermediate, dtype=torch.int64,
                                      device=device)
        self.c_strides1 = torch.full((num_experts,), 2 * intermediate, dtype=torch.int64,
                                     device=device)
        self.c_strides2 = self.ab_strides1  # the same object, as in vLLM

    def apply(self, x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        qc = self.quant_config
        # A stand-in for the grouped GEMM: strides scale nothing but are read, like a kernel's.
        k_scale = (self.ab_strides1.to(x.dtype) / self.c_strides2.to(x.dtype))  # == 1
        n = w2.shape[-1]
        n_scale = self.c_strides1.to(x.dtype) / (2 * self.ab_strides2.to(x.dtype))  # == 1
        xq = x * qc.a1_gscale
        h = torch.einsum("th,eoh->eto", xq, w13) * (qc.g1_alphas * k_scale)[:, None, None]
        act = F.silu(h[..., :n]) * h[..., n:]
        aq = act * qc.a2_gscale
        return torch.einsum("eti,ehi->eth", aq, w2) * (qc.g2_alphas * n_scale)[:, None, None]


class MoEKernel:
    """Like vLLM's FusedMoEKernel: holds the experts object."""

    def __init__(self, fused_experts: CutlassStyleExperts):
        self.fused_experts = fused_experts


class RefFp8MoEMethod:
    """Like vLLM's Fp8MoEMethod: rebuilds the quant config and kernel on every post-load step."""

    def __init__(self) -> None:
        self.moe_quant_config: MoEQuantConfig | None = None
        self.moe_kernel: MoEKernel | None = None

    def process_weights_after_loading(self, layer: RefMoE) -> None:
        a1, a2 = layer.w13_input_scale, layer.w2_input_scale
        self.moe_quant_config = MoEQuantConfig(
            _a1=QuantDesc(scale=a1, alpha_or_gscale=1.0 / a1),
            _a2=QuantDesc(scale=a2, alpha_or_gscale=1.0 / a2),
            _w1=QuantDesc(scale=layer.w13_weight_scale,
                          alpha_or_gscale=layer.w13_weight_scale * a1),
            _w2=QuantDesc(scale=layer.w2_weight_scale, alpha_or_gscale=layer.w2_weight_scale * a2),
        )
        experts = CutlassStyleExperts(layer.num_experts, layer.hidden, layer.intermediate,
                                      layer.w13_weight.device, self.moe_quant_config)
        self.moe_kernel = MoEKernel(experts)


class RefMoE(nn.Module):
    """A routed MoE layer with FP8-style per-tensor scales."""

    def __init__(self, cfg: RefConfig):
        super().__init__()
        e, h, n = cfg.experts, cfg.hidden, cfg.intermediate
        self.num_experts, self.hidden, self.intermediate = e, h, n
        self.router = nn.Linear(h, e, bias=False)
        self.w13_weight = nn.Parameter(torch.empty(e, 2 * n, h), requires_grad=False)
        self.w2_weight = nn.Parameter(torch.empty(e, h, n), requires_grad=False)
        self.w13_weight_scale = nn.Parameter(torch.empty(e), requires_grad=False)
        self.w2_weight_scale = nn.Parameter(torch.empty(e), requires_grad=False)
        self.w13_input_scale = nn.Parameter(torch.empty(()), requires_grad=False)
        self.w2_input_scale = nn.Parameter(torch.empty(()), requires_grad=False)
        self.quant_method = RefFp8MoEMethod()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = torch.softmax(self.router(x), dim=-1)  # [t, e]
        per_expert = self.quant_method.moe_kernel.fused_experts.apply(
            x, self.w13_weight, self.w2_weight)  # [e, t, h]
        return torch.einsum("te,eth->th", weights, per_expert)


class RefAttention(nn.Module):
    """A toy attention whose post-load step re-registers a reciprocal-scale buffer."""

    def __init__(self, cfg: RefConfig):
        super().__init__()
        self.qkv_proj = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.q_scale = nn.Parameter(torch.empty(()), requires_grad=False)

    def process_weights_after_loading(self) -> None:
        self.register_buffer("_q_scale_inv", self.q_scale.reciprocal().reshape(1),
                             persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.qkv_proj(x) * self._q_scale_inv)


class RefBlock(nn.Module):
    def __init__(self, cfg: RefConfig):
        super().__init__()
        self.attn = RefAttention(cfg)
        self.moe = RefMoE(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.moe(x)


class RefDrafterLayer(nn.Module):
    def __init__(self, cfg: RefConfig):
        super().__init__()
        rows = (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim
        self.qkv_proj = nn.Linear(cfg.hidden, rows, bias=False)


class RefDrafter(nn.Module):
    """Like the DFlash drafters: a fused K/V stack over all layers, rebuilt in load_weights."""

    def __init__(self, cfg: RefConfig):
        super().__init__()
        self.q_size = cfg.heads * cfg.head_dim
        self.kv_size = 2 * cfg.kv_heads * cfg.head_dim
        self.layers = nn.ModuleList(RefDrafterLayer(cfg) for _ in range(cfg.drafter_layers))
        self._fused_kv_weight: torch.Tensor | None = None

    def build_fused_kv(self) -> None:
        q = self.q_size
        self._fused_kv_weight = torch.cat(
            [layer.qkv_proj.weight[q:] for layer in self.layers], 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self._fused_kv_weight.t()


class ReferenceModel(nn.Module):
    """A tiny decoder with MoE blocks and a drafter, loaded and post-processed like vLLM."""

    def __init__(self, cfg: RefConfig = RefConfig()):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(RefBlock(cfg) for _ in range(cfg.layers))
        self.drafter = RefDrafter(cfg)
        self.requires_grad_(False)

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        """Copy checkpoint tensors into the kept parameters (like vLLM's weight loaders)."""
        load_in_place(self, weights)
        self.drafter.build_fused_kv()  # work done inside load_weights reruns on every reload

    def process_weights_after_loading(self) -> None:
        """The engine's post-load step: new derived tensors every time."""
        for module in self.modules():
            if isinstance(module, RefMoE):
                module.quant_method.process_weights_after_loading(module)
            elif isinstance(module, RefAttention):
                module.process_weights_after_loading()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = layer(h)
        return torch.cat([h, self.drafter(h)], dim=-1)


def make_weights(cfg: RefConfig, seed: int) -> dict[str, torch.Tensor]:
    """A full checkpoint with values set by ``seed`` (different seeds, different weights)."""
    gen = torch.Generator().manual_seed(seed)
    model = ReferenceModel.__new__(ReferenceModel)
    nn.Module.__init__(model)
    shapes = {n: p.shape for n, p in ReferenceModel(cfg).named_parameters()}
    del model
    out = {}
    for name, shape in shapes.items():
        if name.endswith(("input_scale", "q_scale")):
            out[name] = 0.5 + torch.rand(shape, generator=gen)
        elif name.endswith("weight_scale"):
            out[name] = 0.01 + 0.02 * torch.rand(shape, generator=gen)
        else:
            out[name] = torch.randn(shape, generator=gen) * 0.2
    return out


def build_reference_model(weights: dict[str, torch.Tensor], device: str | torch.device = "cpu",
                          cfg: RefConfig = RefConfig()) -> ReferenceModel:
    """A cold start: construct, load ``weights``, run the post-load step."""
    model = ReferenceModel(cfg).to(device)
    model.load_weights({k: v.to(device) for k, v in weights.items()})
    model.process_weights_after_loading()
    return model
