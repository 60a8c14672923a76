"""Position 21: layers/utils.py:577 ``layer._cpu_unpacked_conv_weight = unpacked`` (CPU only).

Runs vLLM's real ``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)`` (the call
``UnquantizedLinearMethod.process_weights_after_loading`` makes on CPU) on a causal-conv1d
weight (dim, 1, 4) bf16, and reads it back with the real GDN reader
``gdn_attention._unpacked_conv_weight``. Only the C++ pack op and the CPU capability check
are stubbed (no vllm._C here).

Question: after a layerwise reload, and after a kernel-format reload, does the spec-decode
reader see the current conv weight?
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

import vllm.model_executor.layers.utils as lu
from probe_lib import PatternLayer, ToyModel, initial_load, kernel_format_reload, layerwise_reload, make_param
from vllm.model_executor.layers.mamba.ops.cpu.gdn_attention import _unpacked_conv_weight

DIM, WIDTH = 32, 4


def pack(w2d: torch.Tensor) -> torch.Tensor:
    """Stand-in for ops.causal_conv1d_weight_pack: a different (width, dim) layout."""
    return w2d.t().contiguous().view(DIM, 1, WIDTH)


lu.ops.causal_conv1d_weight_pack = pack
torch.cpu._is_avx512_bf16_supported = lambda: True


def create(layer):
    make_param(layer, "weight", (DIM, 1, WIDTH), torch.bfloat16)


def pwal(layer):
    lu.dispatch_cpu_unquantized_gemm(layer, remove_weight=True)


def ckpt(seed):
    g = torch.Generator().manual_seed(seed)
    return {"conv1d.weight": torch.rand(DIM, 1, WIDTH, generator=g).to(torch.bfloat16)}


if __name__ == "__main__":
    conv = PatternLayer(create, pwal)
    model = ToyModel(conv1d=conv)
    gdn = SimpleNamespace(conv1d=conv)
    c0, c1 = ckpt(0), ckpt(1)
    initial_load(model, c0)
    print("initial: stash set:", hasattr(conv, "_cpu_unpacked_conv_weight"),
          "| weight packed in place:", torch.equal(conv.weight.data, pack(c0["conv1d.weight"].view(DIM, WIDTH))),
          "| reader == ckpt0:", torch.equal(_unpacked_conv_weight(gdn), c0["conv1d.weight"].view(DIM, WIDTH)))
    kept = conv.weight
    stash0 = conv._cpu_unpacked_conv_weight
    layerwise_reload(model, c1)
    print("layerwise: kept weight object:", conv.weight is kept,
          "| weight holds packed ckpt1:", torch.equal(conv.weight.data, pack(c1["conv1d.weight"].view(DIM, WIDTH))),
          "| stash rebound:", conv._cpu_unpacked_conv_weight is not stash0,
          "| reader == ckpt1:", torch.equal(_unpacked_conv_weight(gdn), c1["conv1d.weight"].view(DIM, WIDTH)))
    w2 = torch.rand(DIM, WIDTH, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    kernel_format_reload(model, {"conv1d.weight": pack(w2)})
    print("kernel-format (packed ckpt2): weight refilled:", torch.equal(conv.weight.data, pack(w2)),
          "| reader == ckpt2:", torch.equal(_unpacked_conv_weight(gdn), w2),
          "| reader still == ckpt1 (stale):", torch.equal(_unpacked_conv_weight(gdn), c1["conv1d.weight"].view(DIM, WIDTH)))
