"""Muse Spark reference modules mirroring vLLM 0.33.0's owners, names and post-load code.

No vLLM needed. Mirrored from ``vllm/models/muse_spark/`` (0.33.0):

* :class:`MuseSpark1xNormPreservingResidualConnection` (``common/layers.py``): a gated residual
  ``alpha * stream + beta * branch``; ``materialize_coefficients`` registers **new** ``alpha``
  and ``beta`` buffers (fp32) on every call, so a captured graph keeps reading the old ones.
* :class:`MuseSpark1xMoE` (``nvidia/model.py``): ``fold_router_output_multiplier`` folds
  ``config.output_multiplier`` into ``router.weight`` in place, then sets
  ``router_output_multiplier = None``: it folds once per model *lifetime*, so a reload leaves
  the new router weight unfolded (the design notes' "62 router weights differ from a cold
  start"). :class:`FlaglessMuseSpark1xMoE` is the other half of the bug class: a fold with no
  guard at all, applied again by every rerun of the post-load step.
* :func:`materialize_residual_path_constants` is the post-load step vLLM runs at the end of
  ``MuseSpark1xForCausalLM.load_weights``; the loader copies with ``param.data.copy_`` like
  vLLM's ``default_weight_loader``.

The matching specs are ``specs/vllm_muse_spark.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

__all__ = [
    "FlaglessMuseSpark1xMoE", "MuseSpark1xForCausalLM", "MuseSpark1xMoE",
    "MuseSpark1xNormPreservingResidualConnection", "MuseSparkTextConfig",
    "build_muse_spark", "make_muse_weights", "materialize_residual_path_constants",
]


@dataclass(frozen=True)
class MuseSparkTextConfig:
    """The hf_text_config fields the mirrored code reads (tiny sizes)."""

    hidden_size: int = 32
    num_local_experts: int = 4
    num_hidden_layers: int = 2
    output_multiplier: float = 0.37  # not a power of two: a second fold changes bits
    residual_gate_temperature: float = 0.3


class MuseSpark1xNormPreservingResidualConnection(nn.Module):
    """Gated residual ``alpha*stream + beta*branch`` (vLLM ``common/layers.py``)."""

    def __init__(self, dim: int, activation: str = "sigmoid", temperature: float = 0.3,
                 use_stream_gate: bool = True, channel_wise: bool = True, eps: float = 1e-3):
        super().__init__()
        self.eps = eps
        self.activation_type = activation
        self.temperature = temperature
        self.use_stream_gate = use_stream_gate
        self.gate = nn.Parameter(torch.empty(dim if channel_wise else 1, dtype=torch.bfloat16))

    def coefficients(self, w: torch.Tensor) -> tuple[torch.Tensor | float, torch.Tensor]:
        beta = torch.sigmoid(w)
        if self.use_stream_gate:
            alpha_sq = torch.sigmoid(-w) * (1.0 + beta)  # = 1 - beta^2 (stable)
            alpha = torch.sqrt(torch.clamp(alpha_sq, min=self.eps))
        else:
            alpha = 1.0
        return alpha, beta

    def materialize_coefficients(self) -> None:
        """Cache alpha/beta as fp32 buffers: new buffer objects on every call, as in vLLM."""
        w = self.gate.detach().float() / self.temperature
        alpha, beta = self.coefficients(w)
        self.register_buffer("beta", beta.contiguous(), persistent=False)
        if isinstance(alpha, torch.Tensor):
            self.register_buffer("alpha", alpha.contiguous(), persistent=False)
        else:
            self.alpha = alpha
        self._coefficients_ready = True

    def forward(self, stream: torch.Tensor, branch: torch.Tensor) -> torch.Tensor:
        dtype = stream.dtype
        branch = branch.to(dtype)
        if getattr(self, "_coefficients_ready", False):
            alpha, beta = self.alpha, self.beta
        else:
            alpha, beta = self.coefficients(self.gate.float() / self.temperature)
        return (alpha * stream + beta * branch).to(dtype)


class GateLinear(nn.Linear):
    """The router projection (vLLM ``GateLinear``: fp32 params, fp32 logits)."""


class MuseSpark1xRouter:
    """Holds the multiplier the routing kernel applies while it is not folded."""

    def __init__(self, router_output_multiplier: float | None):
        self.router_output_multiplier = router_output_multiplier


class MuseSpark1xMoE(nn.Module):
    """A routed MoE whose router output multiplier is folded into the router weight."""

    def __init__(self, config: MuseSparkTextConfig):
        super().__init__()
        h, e = config.hidden_size, config.num_local_experts
        self.router = GateLinear(h, e, bias=False, dtype=torch.float32)
        self.register_buffer("expert_bias", torch.zeros(e, dtype=torch.float32))
        self.experts_weight = nn.Parameter(torch.empty(e, h, h))
        self.router_output_multiplier: float | None = config.output_multiplier
        self.moe_router = MuseSpark1xRouter(self.router_output_multiplier)

    def fold_router_output_multiplier(self) -> None:
        """Fold the router output multiplier into the gate weight (nvidia/model.py:626)."""
        if self.router_output_multiplier is None:
            return
        with torch.no_grad():
            self.router.weight.mul_(self.router_output_multiplier)
        self.router_output_multiplier = None
        self.moe_router.router_output_multiplier = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.router(x.float())
        multiplier = self.moe_router.router_output_multiplier
        if multiplier is not None:
            logits = logits * multiplier
        scores = torch.sigmoid(logits) + self.expert_bias  # [t, e]
        per_expert = torch.einsum("th,ehk->etk", x, self.experts_weight)
        return torch.einsum("te,etk->tk", scores, per_expert)


class FlaglessMuseSpark1xMoE(MuseSpark1xMoE):
    """The bug class: a fold without a guard, applied again by every post-load rerun."""

    def fold_router_output_multiplier(self) -> None:
        with torch.no_grad():
            self.router.weight.mul_(self.router_output_multiplier)
        self.moe_router.router_output_multiplier = None


class MuseSpark1xDecoderLayer(nn.Module):
    def __init__(self, config: MuseSparkTextConfig, moe_cls: type[MuseSpark1xMoE],
                 connection_cls: type[nn.Module]):
        super().__init__()
        h = config.hidden_size
        self.self_attn = nn.Linear(h, h, bias=False)
        self.feed_forward = moe_cls(config)
        temperature = config.residual_gate_temperature
        self.add_attn = connection_cls(dim=h, activation="sigmoid", temperature=temperature,
                                       use_stream_gate=True, channel_wise=True)
        self.add_ffn = connection_cls(dim=h, activation="sigmoid", temperature=temperature,
                                      use_stream_gate=True, channel_wise=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.add_attn(x, torch.tanh(self.self_attn(x)))
        return self.add_ffn(x, self.feed_forward(x))


class MuseSpark1xModel(nn.Module):
    def __init__(self, config: MuseSparkTextConfig, moe_cls: type[MuseSpark1xMoE],
                 connection_cls: type[nn.Module]):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(
            MuseSpark1xDecoderLayer(config, moe_cls, connection_cls)
            for _ in range(config.num_hidden_layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def materialize_residual_path_constants(model: nn.Module) -> int:
    """Precompute parameter-only constants after weight loading (common/layers.py:325)."""
    n_gates = 0
    for module in model.modules():
        if hasattr(module, "materialize_coefficients"):
            module.materialize_coefficients()
            n_gates += 1
        else:
            fold = getattr(module, "fold_router_output_multiplier", None)
            if callable(fold):
                fold()
    return n_gates


class MuseSpark1xForCausalLM(nn.Module):
    """The text model: ``load_weights`` copies, then runs the residual-path post-load step."""

    def __init__(self, config: MuseSparkTextConfig = MuseSparkTextConfig(),
                 moe_cls: type[MuseSpark1xMoE] = MuseSpark1xMoE,
                 connection_cls: type[nn.Module] = MuseSpark1xNormPreservingResidualConnection,
                 post_load=materialize_residual_path_constants):
        super().__init__()
        self.model = MuseSpark1xModel(config, moe_cls, connection_cls)
        self.metap_output_multiplier = config.output_multiplier
        self._post_load = post_load
        self.requires_grad_(False)

    def load_weights(self, weights: dict[str, torch.Tensor]) -> set[str]:
        """Copy into the kept parameters (``param.data.copy_``), then the post-load step."""
        params = {**dict(self.named_parameters()), **dict(self.named_buffers())}
        for name, value in weights.items():
            params[name].data.copy_(value)
        self._post_load(self)
        return set(weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


def make_muse_weights(config: MuseSparkTextConfig, seed: int) -> dict[str, torch.Tensor]:
    """A full checkpoint; different seeds give different values for every tensor."""
    gen = torch.Generator().manual_seed(seed)
    shapes = {n: (p.shape, p.dtype) for n, p in MuseSpark1xForCausalLM(config).named_parameters()}
    shapes["model.layers.0.feed_forward.expert_bias"] = ((config.num_local_experts,),
                                                         torch.float32)
    for i in range(1, config.num_hidden_layers):
        shapes[f"model.layers.{i}.feed_forward.expert_bias"] = shapes[
            "model.layers.0.feed_forward.expert_bias"]
    out = {}
    for name, (shape, dtype) in shapes.items():
        scale = 1.0 if name.endswith(".gate") else 0.2
        out[name] = (torch.randn(shape, generator=gen) * scale).to(dtype)
    return out


def build_muse_spark(weights: dict[str, torch.Tensor],
                     config: MuseSparkTextConfig = MuseSparkTextConfig(),
                     **classes) -> MuseSpark1xForCausalLM:
    """A cold start: construct, load ``weights``, run the post-load step."""
    model = MuseSpark1xForCausalLM(config, **classes)
    model.load_weights(weights)
    return model
