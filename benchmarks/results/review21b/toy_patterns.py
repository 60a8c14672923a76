"""CPU toys of three patterns in the v15 drawn files, with vLLM 0.33.0's own reload functions.

A: a quant config built in quant-method PWAL from `layer.w13_weight_scale` after
   replace_parameter (inc_mxfp8_moe.py:149, mxfp4.py:379/:868/:1004).
B: PWAL deletes a registered weight and stores a plain tensor attribute instead
   (MXFP4 Triton weight format, mxfp4.py:369-372, :854-857).
C: a rebuild guard (`is_weight_update = self.moe_kernel is not None`) that skips the
   experts' in-place prepack on reload (unquantized_fused_moe_method.py:180-198 with
   cpu_moe.py:269-280): a near-miss remark, not a site.
Checkpoint tensors go through each registered parameter's weight_loader, as
AutoWeightsLoader would; the kernel-format reload is get_parameter_for_reload(...).copy_.
"""
import types

import torch

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter

CFG = types.SimpleNamespace(dtype=torch.float32)


def param(*shape):
    p = torch.nn.Parameter(torch.empty(*shape), requires_grad=False)
    p.weight_loader = default_weight_loader
    return p


class Layer(torch.nn.Module):
    def __init__(self, qm):
        super().__init__()
        self.quant_method = qm
        self.register_parameter("w13_weight", param(4, 8))
        self.register_parameter("w13_weight_scale", param(4, 2))


def load(model, ckpt):
    for name, t in ckpt.items():
        p = getattr(model.layer, name)
        p.weight_loader(p, t)


def ckpt():
    return {"w13_weight": torch.randn(4, 8), "w13_weight_scale": torch.rand(4, 2)}


def start(qm):
    model = torch.nn.Module()
    model.layer = Layer(qm)
    record_metadata_for_reloading(model)
    a = ckpt()
    load(model, a)
    qm.process_weights_after_loading(model.layer)
    return model, a


def layerwise(model, b):
    initialize_layerwise_reload(model)
    load(model, b)
    finalize_layerwise_reload(model, CFG)


class A(QuantizeMethodBase):
    def create_weights(self, *a, **k):
        pass

    def process_weights_after_loading(self, layer):
        replace_parameter(layer, "w13_weight_scale", layer.w13_weight_scale.data * 1.0)
        self.moe_quant_config = {"w1_scale": layer.w13_weight_scale}

    def apply(self, *a, **k):
        pass


class B(QuantizeMethodBase):
    def create_weights(self, *a, **k):
        pass

    def process_weights_after_loading(self, layer):
        w = layer.w13_weight.data * 2.0  # stands for the swizzled triton tensor
        s = layer.w13_weight_scale.data * 2.0
        del layer.w13_weight
        del layer.w13_weight_scale
        layer.w13_weight = w  # plain attribute (mxfp4.py:369)
        self.w13_precision_config = {"scale": s}  # (mxfp4.py:371)

    def apply(self, *a, **k):
        pass


class C(QuantizeMethodBase):
    moe_kernel = None

    def create_weights(self, *a, **k):
        pass

    def process_weights_after_loading(self, layer):
        is_weight_update = self.moe_kernel is not None
        replace_parameter(layer, "w13_weight", layer.w13_weight.data)
        if not is_weight_update:
            self.moe_kernel = object()
            # experts PWAL: in-place prepack into the same-shaped parameter
            replace_parameter(layer, "w13_weight", layer.w13_weight.data.flip(-1).contiguous())

    def apply(self, *a, **k):
        pass


def main():
    print("== A: quant config aliasing a replace_parameter target ==")
    qm = A()
    model, a = start(qm)
    kept = model.layer.w13_weight_scale
    print("startup: config holds the kept scale:", qm.moe_quant_config["w1_scale"] is kept)
    b = ckpt()
    layerwise(model, b)
    cfg = qm.moe_quant_config["w1_scale"]
    print("after layerwise: config holds the kept scale:", cfg is kept,
          "| same storage:", cfg.data_ptr() == kept.data_ptr(),
          "| values == B:", torch.equal(cfg, b["w13_weight_scale"]))
    c = torch.rand(4, 2)
    get_parameter_for_reload(model, "layer.w13_weight_scale").copy_(c)
    print("after kernel-format reload: kept == C:", torch.equal(kept, c),
          "| config == C:", torch.equal(qm.moe_quant_config["w1_scale"], c),
          "| config still B (stale):", torch.equal(qm.moe_quant_config["w1_scale"], b["w13_weight_scale"]))

    print("== B: plain tensor attribute replacing a registered weight ==")
    qm = B()
    model, a = start(qm)
    w0 = model.layer.w13_weight
    p0 = w0.data_ptr()
    s0 = qm.w13_precision_config["scale"].data_ptr()
    print("startup: w13_weight is a Parameter:", isinstance(w0, torch.nn.Parameter),
          "| registered:", "w13_weight" in model.layer._parameters)
    b = ckpt()
    layerwise(model, b)
    w1 = model.layer.w13_weight
    print("after layerwise: same object:", w1 is w0, "| storage moved:", w1.data_ptr() != p0,
          "| values == 2*B:", torch.equal(w1, b["w13_weight"] * 2),
          "| precision-config scale moved:", qm.w13_precision_config["scale"].data_ptr() != s0,
          "| startup storage still 2*A:", torch.equal(w0, a["w13_weight"] * 2))

    print("== C: rebuild guard skips the experts' prepack on reload (near-miss remark) ==")
    qm = C()
    model, a = start(qm)
    kept = model.layer.w13_weight
    print("startup: kept == prepack(A):", torch.equal(kept, a["w13_weight"].flip(-1)))
    b = ckpt()
    layerwise(model, b)
    print("after layerwise: same object:", model.layer.w13_weight is kept,
          "| kept == prepack(B):", torch.equal(kept, b["w13_weight"].flip(-1)),
          "| kept == raw B (not prepacked):", torch.equal(kept, b["w13_weight"]))


if __name__ == "__main__":
    with torch.no_grad():
        main()
