"""Toy check (CPU) of vLLM 0.33.0 layerwise + kernel-format reload on patterns of
positions 0-13 of the outside7 draw. Uses vLLM's own reload functions."""
import torch
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.model_loader.reload.layerwise import (
    record_metadata_for_reloading, initialize_layerwise_reload, finalize_layerwise_reload)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload


class ToyMethod(QuantizeMethodBase):
    def create_weights(self, layer, *a, **k):
        pass

    def apply(self, layer, *a, **k):
        pass

    def process_weights_after_loading(self, layer):
        # items 3/4/5/12/7: container built in quant-method PWAL referencing a param
        self.cfg = {"w1_scale": layer.w_scale, "w2_bias": layer.w2_bias}
        # item 0: bf16 copy/view of a bias built in PWAL
        self.bias_bf16 = layer.w2_bias.detach().to(torch.bfloat16).contiguous()
        # items 2/8: fresh workspace each PWAL
        self.locks = torch.zeros(4, dtype=torch.int32)
        # items 10/11: non-persistent buffer registered in PWAL (clone of weight)
        layer.register_buffer("_gather", layer.weight.detach().clone(), persistent=False)
        # item 13: param deleted, replaced by plain attribute
        w2 = layer.w2.detach() * 1
        del layer.w2
        layer.w2 = w2


class Toy(torch.nn.Module):
    def __init__(self, bias_dtype):
        super().__init__()
        for n, shape, dt in (("weight", (4,), torch.float32), ("w_scale", (4,), torch.float32),
                             ("w2_bias", (4,), bias_dtype), ("w2", (4,), torch.float32)):
            p = torch.nn.Parameter(torch.zeros(shape, dtype=dt), requires_grad=False)
            p.weight_loader = default_weight_loader
            self.register_parameter(n, p)
        self.quant_method = ToyMethod()


class M(torch.nn.Module):
    def __init__(self, bias_dtype):
        super().__init__()
        self.l = Toy(bias_dtype)


def load(model, val):
    for n in ("weight", "w_scale", "w2_bias", "w2"):
        p = getattr(model.l, n)
        p.weight_loader(p, torch.full((4,), val, dtype=p.dtype))


def run(bias_dtype):
    m = M(bias_dtype)
    record_metadata_for_reloading(m)
    load(m, 1.0)
    m.l.quant_method.process_weights_after_loading(m.l)
    qm, l = m.l.quant_method, m.l
    ptr = {"locks": qm.locks.data_ptr(), "w2": l.w2.data_ptr(), "cfg_w1_scale": qm.cfg["w1_scale"].data_ptr(),
           "gather": l._gather.data_ptr(), "bias_bf16": qm.bias_bf16.data_ptr()}
    # layerwise reload with value 2
    initialize_layerwise_reload(m)
    load(m, 2.0)
    finalize_layerwise_reload(m, None)
    out = {"bias_dtype": str(bias_dtype)}
    out["after_layerwise"] = {
        "kept_w_scale": l.w_scale.tolist(),
        "cfg_w1_scale": qm.cfg["w1_scale"].tolist(),
        "cfg_w1_scale_is_kept": qm.cfg["w1_scale"] is l.w_scale,
        "gather_(buffer,_expect_2)": l._gather.tolist(),
        "gather_same_storage": l._gather.data_ptr() == ptr["gather"],
        "locks_moved": qm.locks.data_ptr() != ptr["locks"],
        "w2_plain_attr_moved": l.w2.data_ptr() != ptr["w2"],
        "w2_value": l.w2.tolist(),
        "bias_bf16": qm.bias_bf16.tolist(),
    }
    # kernel-format reload with value 3 (what is still a parameter)
    for n in ("weight", "w_scale", "w2_bias"):
        get_parameter_for_reload(m, "l." + n).copy_(torch.full((4,), 3.0))
    try:
        get_parameter_for_reload(m, "l.w2").copy_(torch.full((4,), 3.0))
        w2kf = "ok"
    except Exception as e:  # record how the kernel-format path fails
        w2kf = f"{type(e).__name__}: {e}"
    out["after_kernel_format"] = {
        "kept_w_scale": l.w_scale.tolist(),
        "cfg_w1_scale_(eager_reader)": qm.cfg["w1_scale"].tolist(),
        "cfg_w2_bias": qm.cfg["w2_bias"].tolist(),
        "bias_bf16": qm.bias_bf16.tolist(),
        "gather": l._gather.tolist(),
        "w2_kernel_format": w2kf,
    }
    return out


if __name__ == "__main__":
    import json
    print(json.dumps([run(torch.float32), run(torch.bfloat16)], indent=1))
