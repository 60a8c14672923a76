"""Position 22: layers/utils.py:599 ``layer.cpu_linear = lambda ...: zentorch_linear_unary(x, zen_weight, ...)``
(Zen CPU only).

Runs vLLM's real ``dispatch_cpu_unquantized_gemm`` with both callers' arguments:
- ``remove_weight=True``: ``UnquantizedLinearMethod`` (linear.py:217);
- ``remove_weight=False``: ``UnquantizedEmbeddingMethod`` (vocab_parallel_embedding.py:71),
  i.e. ``ParallelLMHead`` / ``VocabParallelEmbedding``, whose ``apply`` goes through
  ``cpu_unquantized_gemm`` -> ``layer.cpu_linear``.
The reader is the real ``cpu_unquantized_gemm`` (utils.py:679). Only the platform check and
the two zentorch ops are stubbed (registered with torch.library as plain F.linear / clone).
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F

import vllm.model_executor.layers.utils as lu
from probe_lib import PatternLayer, ToyModel, initial_load, kernel_format_reload, layerwise_reload, make_param
from vllm.platforms import current_platform

N, K = 16, 32

lib = torch.library.Library("zentorch", "DEF")
lib.define("zentorch_linear_unary(Tensor x, Tensor w, Tensor? b, *, bool is_weight_prepacked=False) -> Tensor")
lib.impl("zentorch_linear_unary", lambda x, w, b, is_weight_prepacked=False: F.linear(x, w, b), "CPU")
lib.define("zentorch_weight_prepack_for_linear(Tensor w) -> Tensor")
lib.impl("zentorch_weight_prepack_for_linear", lambda w: w.clone(), "CPU")
type(current_platform).is_zen_cpu = lambda self: True


def run(label: str, remove_weight: bool, prepack: bool) -> None:
    os.environ["VLLM_ZENTORCH_WEIGHT_PREPACK"] = "1" if prepack else "0"

    def create(layer):
        make_param(layer, "weight", (N, K))

    def pwal(layer):
        lu.dispatch_cpu_unquantized_gemm(layer, remove_weight=remove_weight)

    def ckpt(seed):
        return {"lin.weight": torch.rand(N, K, generator=torch.Generator().manual_seed(seed))}

    layer = PatternLayer(create, pwal)
    model = ToyModel(lin=layer)
    x = torch.rand(3, K)
    read = lambda: lu.cpu_unquantized_gemm(layer, x, layer.weight, None)  # noqa: E731
    c0, c1, c2 = ckpt(0), ckpt(1), ckpt(2)
    initial_load(model, c0)
    print(f"[{label}] initial: weight numel={layer.weight.numel()}; reader == ckpt0:",
          torch.allclose(read(), F.linear(x, c0["lin.weight"])))
    layerwise_reload(model, c1)
    print(f"[{label}] layerwise: reader == ckpt1:", torch.allclose(read(), F.linear(x, c1["lin.weight"])))
    try:
        kernel_format_reload(model, {"lin.weight": c2["lin.weight"]})
    except RuntimeError as e:
        print(f"[{label}] kernel-format after layerwise: RAISES {type(e).__name__}: {str(e).splitlines()[0][:90]}")
        return
    out = read()
    print(f"[{label}] kernel-format after layerwise: weight refilled:", torch.equal(layer.weight.data, c2["lin.weight"]),
          "| reader == ckpt2:", torch.allclose(out, F.linear(x, c2["lin.weight"])),
          "| reader == ckpt1 (stale):", torch.allclose(out, F.linear(x, c1["lin.weight"])))
    # kernel-format reload straight after the initial load (no layerwise reload before it)
    layer2 = PatternLayer(create, pwal)
    model2 = ToyModel(lin=layer2)
    initial_load(model2, c0)
    kernel_format_reload(model2, {"lin.weight": c2["lin.weight"]})
    out2 = lu.cpu_unquantized_gemm(layer2, x, layer2.weight, None)
    print(f"[{label}] kernel-format after initial load only: reader == ckpt2:",
          torch.allclose(out2, F.linear(x, c2["lin.weight"])))


if __name__ == "__main__":
    run("Linear remove_weight=True, no prepack", True, False)
    run("Linear remove_weight=True, prepack", True, True)
    run("Embedding/LMHead remove_weight=False, no prepack", False, False)
    run("Embedding/LMHead remove_weight=False, prepack", False, True)
