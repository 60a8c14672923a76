"""Reference Kimi-K3 specialized decode, TP16: the prepared dense MLP's padded down projection.

Mirrors vLLM 0.33.0's owners and names at tiny sizes: ``KimiLinearForCausalLM`` with
``model.layers[0].mlp.gate_up_proj.weight`` ``[2 * I, H]`` and ``mlp.down_proj.weight``
``[H, I]`` (``I`` the local intermediate size), and ``specialized_decode`` (built once, before
CUDA graph capture, by ``build_specialized_decode``) whose ``feed_forward[0]`` is a
``PreparedDenseMLP`` (``specialized_decode/cutedsl/moe/dense.py``): when ``I`` is not a multiple
of 128 (TP16: 2112 -> 2176) its ``down`` GEMM holds ``pad(down_proj.weight, (0, padded - I))``,
a copy the compiled kernel reads by address. The spec is ``vllm-kimi-k3-specialized-dense-down-
tp16`` in ``specs/vllm_kimi_k3_kda.yaml``.
"""

from __future__ import annotations

import torch
from torch import nn

from derivgraph.tools.loading import load_in_place  # noqa: F401  (re-exported for the tests)

__all__ = ["KimiLinearForCausalLM", "build_kimi_k3_dense", "load_in_place",
           "make_kimi_k3_dense_weights"]

HIDDEN, INTER = 16, 40  # INTER pads to 128, as TP16's 2112 pads to 2176


class PreparedProjection:
    def __init__(self, weight: torch.Tensor) -> None:
        self.weight, self.device = weight, weight.device


class PreparedDenseMLP:
    """Like vLLM's: TP16 pads down K to a multiple of 128 (a copy)."""

    def __init__(self, mlp: nn.Module) -> None:
        gate_up, down = mlp.gate_up_proj.weight, mlp.down_proj.weight
        self.hidden = hidden = gate_up.shape[0] // 2
        self.padded = padded = (hidden + 127) // 128 * 128
        if padded != hidden:
            down = torch.nn.functional.pad(down.detach(), (0, padded - hidden))
        self.gate, self.down = PreparedProjection(gate_up), PreparedProjection(down)


class SpecializedDecode:
    def __init__(self, backbone: nn.Module, tp: int = 16, rank: int = 0) -> None:
        self.backbone, self.tp, self.rank = backbone, tp, rank
        self.feed_forward = {0: PreparedDenseMLP(backbone.layers[0].mlp)}


class _Linear(nn.Module):
    def __init__(self, rows: int, cols: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, cols, dtype=torch.bfloat16),
                                   requires_grad=False)


class _MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_up_proj = _Linear(2 * INTER, HIDDEN)
        self.down_proj = _Linear(HIDDEN, INTER)


class _Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = _MLP()


class _Backbone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([_Layer()])


class KimiLinearForCausalLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = _Backbone()
        self.specialized_decode: SpecializedDecode | None = None

    def build_specialized_decode(self, tp: int = 16) -> None:
        self.specialized_decode = SpecializedDecode(self.model, tp)


def make_kimi_k3_dense_weights(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"model.layers.0.mlp.gate_up_proj.weight":
            torch.randn(2 * INTER, HIDDEN, generator=g).bfloat16(),
            "model.layers.0.mlp.down_proj.weight":
            torch.randn(HIDDEN, INTER, generator=g).bfloat16()}



def build_kimi_k3_dense(weights: dict[str, torch.Tensor], tp: int = 16) -> nn.Module:
    """A cold start: load, then build the specialized decode (before graph capture)."""
    model = KimiLinearForCausalLM()
    load_in_place(model, weights)
    model.build_specialized_decode(tp)
    return model
