"""CPU toy checks for outside precision judge B (draw positions 14-26).

Toy modules copy the store patterns of the judged sites and go through vLLM
0.33.0's own reload functions: record_metadata_for_reloading,
initialize_layerwise_reload, the (wrapped) weight loaders,
finalize_layerwise_reload, and get_parameter_for_reload(...).copy_ for the
kernel-format path. No real kernels (they need CUDA/ROCm/XPU).

  A  quant-method PWAL builds a config holding layer params (items 14, 15, 19,
     24, 25, 26): after a layerwise reload the config holds the reload
     temporary; a kernel-format reload after it refills only the kept param.
  B  non-persistent buffer registered in the quant PWAL as a clone of a scale
     (item 17): after a layerwise reload the kept buffer keeps the old value.
  C  PWAL deletes the weight param and stores a new tensor as a plain layer
     attribute (items 20-23; also the b12x packed weight of item 18): a
     layerwise reload moves the storage; a kernel-format reload cannot reach it.
  D  PWAL stores a packed copy and empties the source (item 18): layerwise
     reload moves the packed storage; a kernel-format reload raises.
"""
import torch
import torch.nn as nn
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.reload.layerwise import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter


class ConfigMethod(QuantizeMethodBase):
    """A: like fp8/moe_wna16/quark/inc/online MoE methods."""

    def create_weights(self, layer, *a, **k):
        layer.register_parameter("w13_weight_scale", nn.Parameter(torch.zeros(4), requires_grad=False))
        layer.register_parameter("w2_bias", nn.Parameter(torch.zeros(4), requires_grad=False))

    def process_weights_after_loading(self, layer):
        # a kernel-format conversion that keeps the shape (copied in place by replace_parameter)
        replace_parameter(layer, "w13_weight_scale", layer.w13_weight_scale * 1.0)
        cfg = {"w1_scale": layer.w13_weight_scale}
        cfg["w2_bias"] = layer.w2_bias  # like quant_config._w2.bias = w2_bias
        self.moe_quant_config = cfg

    def apply(self, layer, *a, **k):
        return self.moe_quant_config["w1_scale"] + self.moe_quant_config["w2_bias"]


class GatherBufferMethod(QuantizeMethodBase):
    """B: like modelopt.py:2682 register_buffer(..._for_gather, clone, persistent=False)."""

    def create_weights(self, layer, *a, **k):
        layer.register_parameter("weight_global_scale", nn.Parameter(torch.zeros(1), requires_grad=False))

    def process_weights_after_loading(self, layer):
        layer.register_buffer(
            "_nvfp4_weight_global_scale_for_gather",
            layer.weight_global_scale.detach().clone(),
            persistent=False,
        )

    def apply(self, layer, *a, **k):
        return layer._nvfp4_weight_global_scale_for_gather


class PlainAttrMethod(QuantizeMethodBase):
    """C: like mxfp4.py Triton backends: del the param, store a new tensor as plain attr."""

    def create_weights(self, layer, *a, **k):
        layer.register_parameter("w13_weight", nn.Parameter(torch.zeros(8), requires_grad=False))
        layer.register_parameter("w13_bias", nn.Parameter(torch.zeros(2), requires_grad=False))

    def process_weights_after_loading(self, layer):
        w13 = layer.w13_weight.detach().reshape(2, 4).t().contiguous()  # "swizzle"
        del layer.w13_weight
        layer.w13_weight = w13  # plain tensor attribute
        self.w13_precision_config = {"scale": w13 * 2}

    def apply(self, layer, *a, **k):
        return layer.w13_weight


class PackEmptyMethod(QuantizeMethodBase):
    """D: like modelopt_block_quant.py:366: packed copy, source replaced by empty(0)."""

    def create_weights(self, layer, *a, **k):
        layer.register_parameter("weight", nn.Parameter(torch.zeros(8), requires_grad=False))

    def process_weights_after_loading(self, layer):
        layer.b12x_block_weight = layer.weight.data.flip(0).clone()
        replace_parameter(layer, "weight", torch.empty(0))

    def apply(self, layer, *a, **k):
        return layer.b12x_block_weight


class Layer(nn.Module):
    def __init__(self, method):
        super().__init__()
        self.quant_method = method
        method.create_weights(self)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Layer(ConfigMethod())
        self.b = Layer(GatherBufferMethod())
        self.c = Layer(PlainAttrMethod())
        self.d = Layer(PackEmptyMethod())

    def load_weights(self, weights):
        for name, w in weights:
            param = self.get_parameter(name)
            getattr(param, "weight_loader", default_weight_loader)(param, w)


def ckpt(v: float):
    return [
        ("a.w13_weight_scale", torch.full((4,), v)),
        ("a.w2_bias", torch.full((4,), v + 0.5)),
        ("b.weight_global_scale", torch.full((1,), v)),
        ("c.w13_weight", torch.arange(8.0) + v),
        ("c.w13_bias", torch.full((2,), v)),
        ("d.weight", torch.arange(8.0) + v),
    ]


def pwal(model):
    for m in model.modules():
        qm = getattr(m, "quant_method", None)
        if isinstance(qm, QuantizeMethodBase):
            qm.process_weights_after_loading(m)


def report(model, tag):
    a, b, c, d = model.a, model.b, model.c, model.d
    cfg = a.quant_method.moe_quant_config
    print(f"--- {tag}")
    print(f"A kept w13_weight_scale={a.w13_weight_scale.tolist()} cfg w1_scale={cfg['w1_scale'].tolist()} "
          f"cfg is kept: {cfg['w1_scale'] is a.w13_weight_scale}")
    print(f"A kept w2_bias={a.w2_bias.tolist()} cfg w2_bias={cfg['w2_bias'].tolist()} "
          f"cfg is kept: {cfg['w2_bias'] is a.w2_bias}")
    print(f"B weight_global_scale={b.weight_global_scale.tolist()} "
          f"gather buffer={b._nvfp4_weight_global_scale_for_gather.tolist()}")
    print(f"C w13_weight (plain attr) data_ptr={c.w13_weight.data_ptr()} values={c.w13_weight.flatten().tolist()}")
    print(f"D weight numel={d.weight.numel()} b12x_block_weight data_ptr={d.b12x_block_weight.data_ptr()} "
          f"values={d.b12x_block_weight.tolist()}")


def main():
    torch.manual_seed(0)
    model = Model()
    record_metadata_for_reloading(model)
    model.load_weights(ckpt(1.0))
    pwal(model)
    report(model, "after first load (v=1)")
    keep = {"c_ptr": model.c.w13_weight.data_ptr(), "d_ptr": model.d.b12x_block_weight.data_ptr()}
    old_c = model.c.w13_weight  # what a captured graph would still point at
    old_d = model.d.b12x_block_weight

    initialize_layerwise_reload(model)
    model.load_weights(ckpt(2.0))
    finalize_layerwise_reload(model, None)
    report(model, "after layerwise reload (v=2)")
    print(f"C storage moved: {model.c.w13_weight.data_ptr() != keep['c_ptr']} "
          f"(old tensor still v=1: {old_c.flatten().tolist()})")
    print(f"D storage moved: {model.d.b12x_block_weight.data_ptr() != keep['d_ptr']} "
          f"(old tensor still v=1: {old_d.tolist()})")

    print("--- kernel-format reload (v=3): get_parameter_for_reload(...).copy_")
    for name, w in [("a.w13_weight_scale", torch.full((4,), 3.0)),
                    ("a.w2_bias", torch.full((4,), 3.5)),
                    ("b.weight_global_scale", torch.full((1,), 3.0)),
                    ("c.w13_bias", torch.full((2,), 3.0))]:
        get_parameter_for_reload(model, name).copy_(w)
    for name in ("c.w13_weight", "d.weight"):
        try:
            get_parameter_for_reload(model, name).copy_(torch.arange(8.0) + 3)
            print(f"{name}: copy_ succeeded")
        except Exception as e:  # noqa: BLE001 - we report the error type
            print(f"{name}: kernel-format copy_ raises {type(e).__name__}: {e}")
    report(model, "after kernel-format reload (v=3)")


if __name__ == "__main__":
    main()
