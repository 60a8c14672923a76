"""CPU toy: a PWAL that rebinds `layer.bias.data` (Marlin linear kernel, marlin.py:177).

`bias` is in vLLM's SKIP_TENSORS, so a layerwise reload never moves it to meta: the
buffered loads replay into the live (kept) bias and the quant-method PWAL runs on it.
Uses vLLM 0.33.0's own record_metadata_for_reloading / initialize_layerwise_reload /
finalize_layerwise_reload and marlin_permute_bias; the checkpoint is fed through each
parameter's weight_loader as AutoWeightsLoader would.
"""
import types

import torch

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.layers.quantization.utils.marlin_utils import marlin_permute_bias
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

N, K = 64, 32


class ToyMarlinBiasMethod(QuantizeMethodBase):
    def create_weights(self, layer):
        w = torch.nn.Parameter(torch.empty(N, K), requires_grad=False)
        w.weight_loader = default_weight_loader
        layer.register_parameter("weight", w)

    def process_weights_after_loading(self, layer):
        # marlin.py:176-179, verbatim pattern
        if hasattr(layer, "bias") and layer.bias is not None:
            layer.bias.data = marlin_permute_bias(layer.bias)

    def apply(self, layer, x, bias=None):
        return x @ layer.weight.t() + bias


class ToyLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = ToyMarlinBiasMethod()
        self.quant_method.create_weights(self)
        # LinearBase registers bias after create_weights
        b = torch.nn.Parameter(torch.empty(N), requires_grad=False)
        b.weight_loader = default_weight_loader
        self.register_parameter("bias", b)

    def forward(self, x):
        return self.quant_method.apply(self, x, self.bias)


def load(model, ckpt):
    for name, t in ckpt.items():
        p = getattr(model.lin, name)
        p.weight_loader(p, t)


def main():
    model = torch.nn.Module()
    model.lin = ToyLinear()
    record_metadata_for_reloading(model)
    a = {"weight": torch.randn(N, K), "bias": torch.randn(N)}
    load(model, a)
    model.lin.quant_method.process_weights_after_loading(model.lin)
    kept = model.lin.bias
    ptr0 = kept.data_ptr()
    captured = kept.data  # what a captured graph holds: the startup storage
    print("startup bias ptr", ptr0, "== permuted A:",
          torch.equal(captured, marlin_permute_bias(a["bias"])))

    b = {"weight": torch.randn(N, K), "bias": torch.randn(N)}
    initialize_layerwise_reload(model)
    load(model, b)
    finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
    now = model.lin.bias
    print("same bias object after reload:", now is kept)
    print("bias ptr after reload", now.data_ptr(), "moved:", now.data_ptr() != ptr0)
    print("live bias == permuted B:", torch.equal(now, marlin_permute_bias(b["bias"])))
    print("startup storage == permuted B:", torch.equal(captured, marlin_permute_bias(b["bias"])),
          "| == unpermuted B:", torch.equal(captured, b["bias"]))
    print("weight ptr kept:", model.lin.weight.data_ptr() == model.lin.weight.data_ptr())


if __name__ == "__main__":
    main()
