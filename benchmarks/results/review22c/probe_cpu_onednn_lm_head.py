"""Probe for position 27 (layers/utils.py:650, `cpu_linear` over a oneDNN handler).

Runs vLLM 0.33.0's own `UnquantizedEmbeddingMethod.process_weights_after_loading`
(which calls `dispatch_cpu_unquantized_gemm(layer, remove_weight=False)`, the lm_head
path) and vLLM's own reload functions on CPU.  vLLM's `_C` extension is not built in
this wheel, so `create_onednn_mm` / `onednn_mm` are replaced by stand-ins that do what
csrc/cpu/dnnl_helper.cpp does: the handler constructor reorders (copies) the weight
into handler-owned packed memory (`prepack_weight`), and `onednn_mm` multiplies by
that copy.  Everything else (dispatch, cpu_unquantized_gemm, reload) is vLLM code.

Run with: VLLM_TARGET_DEVICE=cpu python3 probe_cpu_onednn_lm_head.py
"""

import os
from types import SimpleNamespace

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

import torch  # noqa: E402
import vllm._custom_ops as ops  # noqa: E402
from torch import nn  # noqa: E402
from vllm.model_executor.layers.vocab_parallel_embedding import (  # noqa: E402
    UnquantizedEmbeddingMethod,
)
from vllm.model_executor.model_loader.reload import (  # noqa: E402
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import reload_weights  # noqa: E402
from vllm.model_executor.model_loader.weight_utils import (  # noqa: E402
    default_weight_loader,
)
from vllm.platforms import current_platform  # noqa: E402


class _Handler:
    def __init__(self, weight_kn: torch.Tensor) -> None:
        self.k, self.n = weight_kn.size()
        self.packed = weight_kn.clone()  # dnnl::reorder into handler-owned memory


def _create_onednn_mm(weight_kn: torch.Tensor, cache_size: int = 128) -> _Handler:
    return _Handler(weight_kn)


def _onednn_mm(handler: _Handler, x: torch.Tensor, bias):
    out = x.reshape(-1, handler.k) @ handler.packed
    return out if bias is None else out + bias


ops._supports_onednn = True
ops.create_onednn_mm = _create_onednn_mm
ops.onednn_mm = _onednn_mm

V, H = 1024, 512  # 2 MiB fp32: above the 1 MiB SGL cap, so the oneDNN branch (line 650)


class Head(nn.Module):
    """An lm_head-like layer: UnquantizedEmbeddingMethod owns weight and PWAL."""

    def __init__(self) -> None:
        super().__init__()
        self.quant_method = UnquantizedEmbeddingMethod()
        self.quant_method.create_weights(
            self, H, [V], H, V, torch.float32, weight_loader=default_weight_loader
        )

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.quant_method.apply(self, x)


class Model(nn.Module):
    def __init__(self, tied: bool) -> None:
        super().__init__()
        self.embed = Head()
        self.lm_head = Head()
        if tied:
            self.lm_head.weight = self.embed.weight  # tie_weights() does exactly this

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        loaded = set()
        for name, w in weights:
            if name not in params:
                continue
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
            loaded.add(name)
        return loaded


def run_pwal(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(getattr(m, "quant_method", None), UnquantizedEmbeddingMethod):
            m.quant_method.process_weights_after_loading(m)


def main() -> None:
    print("platform is_cpu:", current_platform.is_cpu())
    torch.manual_seed(0)
    x = torch.randn(3, H)
    W = [torch.randn(V, H) for _ in range(3)]
    vc = SimpleNamespace(
        model_config=SimpleNamespace(quantization=None, dtype=torch.float32),
        load_config=None,
        lora_config=None,
    )

    def err(model, w):
        return (model.lm_head.logits(x) - x @ w.t()).abs().max().item()

    for tied in (False, True):
        print(f"--- tied={tied}")
        model = Model(tied)
        record_metadata_for_reloading(model)

        def ck(w, tied=tied):
            return [("embed.weight", w)] + ([] if tied else [("lm_head.weight", w)])

        model.load_weights(ck(W[0]))
        run_pwal(model)
        print(
            "cpu_linear is the oneDNN lambda:",
            "onednn_mm" in model.lm_head.cpu_linear.__code__.co_names,
        )
        print("initial load: max|logits - x@W0^T| =", err(model, W[0]))
        ptr = model.lm_head.weight.data_ptr()
        initialize_layerwise_reload(model)
        model.load_weights(ck(W[1]))
        finalize_layerwise_reload(model, None)
        print("layerwise reload W1: weight data_ptr kept:", model.lm_head.weight.data_ptr() == ptr)
        print("  lm_head.weight == W1:", torch.equal(model.lm_head.weight, W[1]))
        print(
            "  max|logits - x@W1^T| =",
            err(model, W[1]),
            " max|logits - x@W0^T| =",
            err(model, W[0]),
        )
        reload_weights(vc, model, iter([("lm_head.weight", W[2])]), None, False)
        print(
            "kernel-format reload W2: lm_head.weight == W2:",
            torch.equal(model.lm_head.weight, W[2]),
        )
        print(
            "  max|logits - x@W2^T| =",
            err(model, W[2]),
            " max|logits - x@W1^T| =",
            err(model, W[1]),
        )


if __name__ == "__main__":
    main()
