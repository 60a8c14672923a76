"""Reference DeepSeek-V4 ROCm compressor GEMM fusion, declared the safe way.

vLLM 0.33.0 (``models/deepseek_v4/amd/rocm.py::DeepseekV4ROCMAiterMLAAttention.
prepare_compressor_gemm_fusion``, called once from the model-level post-load step) does
``fused = torch.cat((main_w, indexer_w), 0)`` and then ``main_w.set_(fused[:main])``,
``indexer_w.set_(fused[main:])``: the two checkpoint Parameters move onto slices of the fused
storage (the indexer one to offset ``main * K``), and the step returns early once fused, so a
reload that rebinds either Parameter leaves ``_fused_compressor_weight`` stale.

The safe layout (:class:`DeepseekV4ROCMAiterMLAAttention` here, ``safe=True``): both checkpoint
Parameters keep their own storage; ``_fused_compressor_weight`` (a non-persistent buffer, as in
vLLM) is a derived ``cat`` that derivgraph refills in place on every reload. Its cost is one
extra copy of the two compressor weights per layer. ``safe=False`` reproduces vLLM's
``.set_()`` for the canary test. The spec is in ``specs/vllm_deepseek_v4.yaml``.
"""

from __future__ import annotations

import torch
from torch import nn

from derivgraph.tools.loading import load_in_place

__all__ = ["DeepseekV4Model", "build_dsv4_model", "make_dsv4_weights"]

MAIN, INDEXER, K, LAYERS = 24, 8, 16, 2


class ReplicatedLinear(nn.Module):
    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, cols, dtype=torch.bfloat16),
                                   requires_grad=False)


class DeepseekCompressor(nn.Module):
    def __init__(self, rows: int):
        super().__init__()
        self.fused_wkv_wgate = ReplicatedLinear(rows, K)


class DeepseekV4Indexer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.compressor = DeepseekCompressor(INDEXER)


class DeepseekV4ROCMAiterMLAAttention(nn.Module):
    def __init__(self, safe: bool):
        super().__init__()
        self.safe = safe
        self.compressor = DeepseekCompressor(MAIN)
        self.indexer = DeepseekV4Indexer()
        self.register_buffer("_fused_compressor_weight", None, persistent=False)
        self._fused_compressor_split_sizes: tuple[int, int] | None = None

    def prepare_compressor_gemm_fusion(self) -> bool:
        main_w = self.compressor.fused_wkv_wgate.weight
        indexer_w = self.indexer.compressor.fused_wkv_wgate.weight
        if self.safe:  # the derived buffer, rebuilt from the checkpoint Parameters
            self._fused_compressor_weight = torch.cat((main_w, indexer_w), 0)
            self._fused_compressor_split_sizes = (main_w.shape[0], indexer_w.shape[0])
            return True
        if self._fused_compressor_weight is not None:  # vLLM 0.33.0
            return False
        fused = torch.cat((main_w, indexer_w), 0)
        with torch.no_grad():
            main_w.set_(fused[: main_w.shape[0]])
            indexer_w.set_(fused[main_w.shape[0]:])
        self._fused_compressor_weight = fused
        self._fused_compressor_split_sizes = (main_w.shape[0], indexer_w.shape[0])
        return True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One GEMM over both compressors, split back (what the fusion is for)."""
        out = x.to(torch.bfloat16) @ self._fused_compressor_weight.T
        return out.float()


class DeepseekV4Model(nn.Module):
    def __init__(self, safe: bool = True):
        super().__init__()
        self.layers = nn.ModuleList(nn.Module() for _ in range(LAYERS))
        for layer in self.layers:
            layer.attn = DeepseekV4ROCMAiterMLAAttention(safe)

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        load_in_place(self, weights)

    def process_weights_after_loading(self) -> None:
        for module in self.modules():
            if isinstance(module, DeepseekV4ROCMAiterMLAAttention):
                module.prepare_compressor_gemm_fusion()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([layer.attn(x) for layer in self.layers])


def make_dsv4_weights(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for i in range(LAYERS):
        p = f"layers.{i}.attn."
        out[p + "compressor.fused_wkv_wgate.weight"] = torch.randn(MAIN, K, generator=g).bfloat16()
        out[p + "indexer.compressor.fused_wkv_wgate.weight"] = torch.randn(
            INDEXER, K, generator=g).bfloat16()
    return out


def build_dsv4_model(weights: dict[str, torch.Tensor], safe: bool = True) -> DeepseekV4Model:
    model = DeepseekV4Model(safe)
    model.load_weights(weights)
    model.process_weights_after_loading()
    return model
