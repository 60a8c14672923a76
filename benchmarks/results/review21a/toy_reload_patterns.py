"""CPU toys (review21a) of three store patterns in the v15 drawn files, with vLLM 0.33.0's own
layerwise reload functions (record_metadata_for_reloading / initialize_layerwise_reload /
finalize_layerwise_reload) and the kernel-format reload (get_parameter_for_reload(...).copy_).

(a) marlin.py:177 `layer.bias.data = marlin_permute_bias(...)` in kernel PWAL: `bias` is in
    SKIP_TENSORS, so during a layerwise reload the layer keeps the kept bias object itself and the
    `.data` rebind moves its storage (a captured graph keeps the old address).
(b) inc_mxfp8_moe.py:144-149: replace_parameter(layer, "w13_weight_scale", same-shape scale), then
    a quant config that holds layer.w13_weight_scale: after a layerwise reload the config holds the
    reload temporary, not the kept parameter.
(c) inc_w4a8_linear.py:82: replace_parameter(layer, "scales_fp16", ...) of a name that
    create_weights never made: is the kept parameter refilled in place by the layerwise copy-back,
    and does a kernel-format reload reach it by name?
(d) inc_wna16_linear.py:432 ark_bias pattern, plain tensor attribute built in PWAL from `bias`:
    after layerwise reload a new object; after kernel-format reload stale.
(e) mxfp4.py:369 Triton pattern: PWAL deletes the registered weight Parameter and stores a
    converted plain tensor under the same name: after a layerwise reload the layer holds a new
    plain tensor (new storage), not a kept Parameter.
"""
import types

import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload, initialize_layerwise_reload, record_metadata_for_reloading)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter, set_weight_attrs

CFG = types.SimpleNamespace(dtype=torch.float32)


class Method(QuantizeMethodBase):
    def __init__(self, case):
        self.case = case

    def create_weights(self, layer):
        for name, shape in (("weight", (8, 8)), ("weight_scale", (8, 1))):
            p = nn.Parameter(torch.empty(*shape), requires_grad=False)
            layer.register_parameter(name, p)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})

    def process_weights_after_loading(self, layer):
        if self.case == "a":   # marlin.py:176-179
            if layer.bias is not None:
                layer.bias.data = layer.bias.flip(0).contiguous()
        elif self.case == "b":  # inc_mxfp8_moe.py:144-149
            replace_parameter(layer, "weight_scale", layer.weight_scale.data.clone())
            self.moe_quant_config = types.SimpleNamespace(w1_scale=layer.weight_scale)
        elif self.case == "c":  # inc_w4a8_linear.py:82
            replace_parameter(layer, "scales_fp16", layer.weight_scale.data.to(torch.float16))
        elif self.case == "d":  # inc_wna16_linear.py:427-432 (ark_linear.bias copied from layer.bias)
            layer.ark_bias = layer.bias.detach().clone().to(torch.float16)
        elif self.case == "e":  # mxfp4.py:369 + oracle/mxfp4.py:1469 (Triton weight format)
            w = layer.weight.data.t().contiguous() * 2
            del layer.weight
            layer.weight = w

    def apply(self, layer, x):
        return x


class Layer(nn.Module):
    def __init__(self, case):
        super().__init__()
        self.quant_method = Method(case)
        self.quant_method.create_weights(self)
        # bias is registered after create_weights, as LinearBase does
        self.bias = nn.Parameter(torch.empty(8), requires_grad=False)
        set_weight_attrs(self.bias, {"weight_loader": default_weight_loader})


def load(model, w, s, b):
    layer = model.layer
    layer.weight.weight_loader(layer.weight, w)
    layer.weight_scale.weight_loader(layer.weight_scale, s)
    layer.bias.weight_loader(layer.bias, b)


def new_values(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, 8, generator=g), torch.rand(8, 1, generator=g), torch.randn(8, generator=g)


for case in "abcde":
    model = nn.Module()
    model.layer = Layer(case)
    layer, qm = model.layer, model.layer.quant_method
    record_metadata_for_reloading(model)
    load(model, *new_values(0))
    qm.process_weights_after_loading(layer)
    print(f"== case {case}: {Method.__doc__ or ''}".rstrip())
    if case == "a":
        kept = layer.bias
        ptr0 = kept.data_ptr()
        w1, s1, b1 = new_values(1)
        initialize_layerwise_reload(model)
        load(model, w1, s1, b1)
        finalize_layerwise_reload(model, CFG)
        print("a: bias still the kept object:", layer.bias is kept)
        print("a: bias storage unchanged (data_ptr):", layer.bias.data_ptr() == ptr0)
        print("a: bias value is the new permuted bias:", torch.equal(layer.bias, b1.flip(0)))
    elif case == "b":
        kept = layer.weight_scale
        w1, s1, b1 = new_values(1)
        initialize_layerwise_reload(model)
        load(model, w1, s1, b1)
        finalize_layerwise_reload(model, CFG)
        cfg = qm.moe_quant_config.w1_scale
        print("b: kept scale still registered:", layer.weight_scale is kept)
        print("b: config holds the kept param:", cfg is kept, "| same storage:",
              cfg.data_ptr() == kept.data_ptr(), "| values equal now:", torch.equal(cfg, kept))
        get_parameter_for_reload(model, "layer.weight_scale").copy_(torch.full((8, 1), 7.0))
        print("b: kernel-format reload refills kept:", bool((kept == 7).all()),
              "| config stale:", not bool((cfg == 7).all()))
    elif case == "c":
        kept = layer.scales_fp16
        ptr0 = kept.data_ptr()
        print("c: scales_fp16 registered as a parameter:", "scales_fp16" in dict(layer.named_parameters()))
        w1, s1, b1 = new_values(1)
        initialize_layerwise_reload(model)
        load(model, w1, s1, b1)
        finalize_layerwise_reload(model, CFG)
        print("c: kept object still registered:", layer.scales_fp16 is kept,
              "| storage unchanged:", layer.scales_fp16.data_ptr() == ptr0,
              "| value = new scale in fp16:", torch.equal(layer.scales_fp16, s1.to(torch.float16)))
        p = get_parameter_for_reload(model, "layer.scales_fp16")
        print("c: kernel-format reload resolves scales_fp16 by name:", p is kept)
    elif case == "d":
        old = layer.ark_bias
        w1, s1, b1 = new_values(1)
        initialize_layerwise_reload(model)
        load(model, w1, s1, b1)
        finalize_layerwise_reload(model, CFG)
        print("d: ark_bias is a plain attribute (not registered):",
              "ark_bias" not in dict(layer.named_parameters()) and "ark_bias" not in dict(layer.named_buffers()))
        print("d: layerwise reload rebinds ark_bias to new storage:",
              layer.ark_bias is not old and layer.ark_bias.data_ptr() != old.data_ptr(),
              "| value current:", torch.equal(layer.ark_bias, b1.to(torch.float16)))
        get_parameter_for_reload(model, "layer.bias").copy_(torch.full((8,), 7.0))
        print("d: kernel-format reload refills bias:", bool((layer.bias == 7).all()),
              "| ark_bias stale:", not bool((layer.ark_bias == 7).all()))
    elif case == "e":
        old = layer.weight
        print("e: after the first load weight is a plain tensor:",
              "weight" not in dict(layer.named_parameters()) and not isinstance(old, nn.Parameter))
        w1, s1, b1 = new_values(1)
        initialize_layerwise_reload(model)
        load(model, w1, s1, b1)
        finalize_layerwise_reload(model, CFG)
        print("e: layerwise reload leaves a new plain tensor:", layer.weight is not old,
              "| new storage:", layer.weight.data_ptr() != old.data_ptr(),
              "| value current:", torch.equal(layer.weight, w1.t().contiguous() * 2),
              "| old value unchanged:", torch.equal(old, new_values(0)[0].t().contiguous() * 2))
