"""The ``my_models`` of the README and docs: a small model whose post-load step rebuilds a
CUTLASS-style experts object with new stride tensors, exactly what the README's first spec
(``examples/my_specs.yaml``) declares.

Run from this folder (``derivgraph`` resolves ``my_models:NAME`` against the working
directory), e.g. ``derivgraph audit runtime --model my_models:build_a --reload
my_models:reload_b --cold my_models:build_b --specs my_specs.yaml --strict``. The functions
follow the CLI protocols: ``build_a()``/``build_b()`` return cold starts of weights A/B,
``reload_b(model)`` reloads B in place and reruns the post-load step, ``loaded_model()`` has
weights loaded and its post-load step not yet run, ``post_load(model)`` runs it.
"""

from __future__ import annotations

import torch
from torch import nn

from derivgraph.tools.loading import load_in_place

__all__ = [
    "MyModel", "build_a", "build_b", "loaded_model", "make_weights", "post_load", "reload_b",
]

EXPERTS, HIDDEN, INTERMEDIATE, LAYERS = 4, 16, 8, 4


class CutlassExpertsFp8Base:
    """Like vLLM's CUTLASS FP8 experts: stride constants allocated in ``__init__``."""

    def __init__(self, experts: int, hidden: int, device: torch.device):
        self.ab_strides1 = torch.full((experts,), hidden, dtype=torch.int64, device=device)
        self.c_strides2 = self.ab_strides1  # the same object, as in vLLM


class MoEKernel:
    def __init__(self, fused_experts: CutlassExpertsFp8Base):
        self.fused_experts = fused_experts


class MyFp8MoEMethod:
    """Rebuilds the kernel (and its strides) on every post-load step, as vLLM does."""

    def __init__(self) -> None:
        self.moe_kernel: MoEKernel | None = None

    def process_weights_after_loading(self, layer: FusedMoE) -> None:
        e, k = layer.w2_weight.shape[0], layer.w2_weight.shape[1]
        self.moe_kernel = MoEKernel(CutlassExpertsFp8Base(e, k, layer.w2_weight.device))


class FusedMoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        e, h, n = EXPERTS, HIDDEN, INTERMEDIATE
        self.w13_weight = nn.Parameter(torch.empty(e, 2 * n, h), requires_grad=False)
        self.w2_weight = nn.Parameter(torch.empty(e, h, n), requires_grad=False)
        self.w13_weight_scale = nn.Parameter(torch.empty(e), requires_grad=False)
        self.quant_method = MyFp8MoEMethod()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        strides = self.quant_method.moe_kernel.fused_experts.ab_strides1  # read like a kernel's
        scale = (strides.to(x.dtype) / x.shape[-1])[:, None, None]  # == 1
        h = torch.einsum("th,eoh->eto", x, self.w13_weight) * scale
        n = self.w2_weight.shape[-1]
        act = torch.nn.functional.silu(h[..., :n]) * h[..., n:]
        out = torch.einsum("eti,ehi->eth", act, self.w2_weight)
        return (out * self.w13_weight_scale[:, None, None]).sum(0)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = FusedMoE()


class MyModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + layer.mlp(x)
        return x


def make_weights(seed: int) -> dict[str, torch.Tensor]:
    """Checkpoint weights: seed 0 is A, seed 1 is B."""
    gen = torch.Generator().manual_seed(seed)
    shapes = {name: p.shape for name, p in MyModel().named_parameters()}
    return {name: torch.randn(shape, generator=gen) * 0.1 for name, shape in shapes.items()}


def post_load(model: MyModel) -> None:
    """The engine's post-load step: each layer's quant method rebuilds its kernel."""
    for module in model.modules():
        if isinstance(module, FusedMoE):
            module.quant_method.process_weights_after_loading(module)


def loaded_model(seed: int = 0, device: str = "cpu") -> MyModel:
    """Weights loaded, post-load step not yet run."""
    model = MyModel().to(device)
    load_in_place(model, make_weights(seed))
    return model


def build_a(device: str = "cpu") -> MyModel:
    """A cold start of weights A."""
    model = loaded_model(0, device)
    post_load(model)
    return model


def build_b(device: str = "cpu") -> MyModel:
    """A cold start of weights B."""
    model = loaded_model(1, device)
    post_load(model)
    return model


def reload_b(model: MyModel) -> None:
    """Reload weights B in place and rerun the post-load step."""
    load_in_place(model, make_weights(1))
    post_load(model)
