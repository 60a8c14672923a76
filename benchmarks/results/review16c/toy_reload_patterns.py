"""CPU toy checks for judge C (positions 27-39): vLLM 0.33.0's own reload functions
on small modules with the same storage pattern as the judged sites.

Run: PYTHONPATH=$PWD python3 benchmarks/results/review16c/toy_reload_patterns.py
"""

import logging
from types import SimpleNamespace

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
from vllm.model_executor.utils import replace_parameter, set_weight_attrs

logging.getLogger("vllm").setLevel(logging.ERROR)
MC = SimpleNamespace(dtype=torch.float32)


def param(*shape, dtype=torch.float32):
    p = nn.Parameter(torch.empty(*shape, dtype=dtype), requires_grad=False)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})
    return p


def load(model, ckpt):
    params = dict(model.named_parameters())
    for name, w in ckpt.items():
        p = params[name]
        getattr(p, "weight_loader", default_weight_loader)(p, w)


def layerwise(model, ckpt):
    initialize_layerwise_reload(model)
    model.load_weights(ckpt)
    finalize_layerwise_reload(model, MC)


def kernel_format(model, ckpt):
    for name, w in ckpt.items():
        get_parameter_for_reload(model, name).copy_(w)


def report(tag, ok_value, same_ptr=None):
    extra = "" if same_ptr is None else f", same storage as at startup: {same_ptr}"
    print(f"{tag}: value {'FRESH' if ok_value else 'STALE'}{extra}")


# ---- A: item 27 (deepseek_v4 hc_attn_fn_broadcast): plain attr refilled by copy_
# at the end of model.load_weights (the model's own PWAL hook called there).
class DecoderA(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = param(4, 6)
        self.fn_broadcast = None


class ModelA(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = DecoderA()

    def finalize(self):
        b = self.layer.fn.detach().view(-1, 2, 3).sum(dim=1)
        if self.layer.fn_broadcast is None:
            self.layer.fn_broadcast = b
        else:
            self.layer.fn_broadcast.copy_(b)

    def load_weights(self, ckpt):
        load(self, ckpt)
        self.finalize()


def expect_a(m):
    return m.layer.fn.detach().view(-1, 2, 3).sum(dim=1)


def run_a():
    m = ModelA()
    record_metadata_for_reloading(m)
    m.load_weights({"layer.fn": torch.randn(4, 6)})
    ptr = m.layer.fn_broadcast.data_ptr()
    layerwise(m, {"layer.fn": torch.randn(4, 6)})
    report(
        "A item27 layerwise",
        torch.equal(m.layer.fn_broadcast, expect_a(m)),
        m.layer.fn_broadcast.data_ptr() == ptr,
    )
    kernel_format(m, {"layer.fn": torch.randn(4, 6)})
    report("A item27 kernel-format after layerwise", torch.equal(m.layer.fn_broadcast, expect_a(m)))


# ---- B: item 28 (kimi_k3 dspark _context_kv_norm_weights): stack of child norm
# weights built by the model-level process_weights_after_loading (initial load only).
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = param(5)


class ModelB(nn.Module):
    def __init__(self):
        super().__init__()
        self.norms = nn.ModuleList([Norm(), Norm()])

    def load_weights(self, ckpt):
        load(self, ckpt)

    def process_weights_after_loading(self):
        self.stacked = torch.stack([n.weight.detach() for n in self.norms]).contiguous()


def ckpt_b():
    return {f"norms.{i}.weight": torch.randn(5) for i in range(2)}


def run_b():
    m = ModelB()
    record_metadata_for_reloading(m)
    m.load_weights(ckpt_b())
    m.process_weights_after_loading()
    layerwise(m, ckpt_b())  # model-level PWAL is not rerun by reload_weights
    exp = torch.stack([n.weight for n in m.norms])
    report("B item28 layerwise", torch.equal(m.stacked, exp))


# ---- C: item 37 (parallel_drafting_hidden_state_tensor): non-persistent buffer
# `mask_hidden` written by a direct copy_ in load_weights (no weight_loader), and a
# tensor allocated once then filled with fc(mask_hidden) at load_model.
class ModelC(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3, bias=False)
        self.fc.weight.requires_grad_(False)
        set_weight_attrs(self.fc.weight, {"weight_loader": default_weight_loader})
        self.register_buffer("mask_hidden", torch.zeros(1, 4), persistent=False)

    def load_weights(self, ckpt):
        ckpt = dict(ckpt)
        self.mask_hidden.copy_(ckpt.pop("mask_hidden").view(1, -1))
        load(self, ckpt)


def ckpt_c():
    return {"mask_hidden": torch.randn(4), "fc.weight": torch.randn(3, 4)}


def run_c():
    m = ModelC()
    record_metadata_for_reloading(m)
    c0 = ckpt_c()
    m.load_weights(c0)
    derived = torch.empty(3)
    with torch.no_grad():
        derived.copy_(m.fc(m.mask_hidden.view(-1)))  # load_model, once
    c1 = ckpt_c()
    try:
        layerwise(m, c1)
    except Exception as exc:  # report the failure mode, do not hide it
        print(f"C item37 layerwise raised {type(exc).__name__}: {exc}")
        return
    print(
        "C item37 mask_hidden after layerwise:",
        "new"
        if torch.equal(m.mask_hidden.view(-1), c1["mask_hidden"])
        else "old"
        if torch.equal(m.mask_hidden.view(-1), c0["mask_hidden"])
        else "other",
    )
    with torch.no_grad():
        exp = m.fc(m.mask_hidden.view(-1))
    report("C item37 fc(mask_hidden) copy, layerwise", torch.allclose(derived, exp))


# ---- D: item 30 (muse Marlin moe_quant_config): quant-method PWAL converts a scale
# to another dtype, replace_parameter()s it (so .data is rebound) and builds a config
# that references the converted tensor.
class QM(QuantizeMethodBase):
    def create_weights(self, layer, *a, **k):
        layer.register_parameter("w_scale", param(4, dtype=torch.float16))

    def apply(self, layer, *a, **k):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        s = layer.w_scale.data.to(torch.float32) * 2
        replace_parameter(layer, "w_scale", s)
        self.qc = SimpleNamespace(w1_scale=s)


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = QM()
        self.quant_method.create_weights(self)


class ModelD(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()

    def load_weights(self, ckpt):
        load(self, ckpt)


def run_d():
    m = ModelD()
    record_metadata_for_reloading(m)
    m.load_weights({"experts.w_scale": torch.randn(4).half()})
    m.experts.quant_method.process_weights_after_loading(m.experts)
    qm = m.experts.quant_method
    print(
        "D item30 startup: qc aliases kept param:",
        qm.qc.w1_scale.data_ptr() == m.experts.w_scale.data_ptr(),
    )
    old_qc = qm.qc
    layerwise(m, {"experts.w_scale": torch.randn(4).half()})
    kept = m.experts.w_scale
    report(
        "D item30 layerwise, new qc (eager)",
        torch.equal(qm.qc.w1_scale, kept),
        qm.qc.w1_scale.data_ptr() == kept.data_ptr(),
    )
    report("D item30 layerwise, old qc (captured)", torch.equal(old_qc.w1_scale, kept))
    kernel_format(m, {"experts.w_scale": torch.randn(4)})
    report(
        "D item30 kernel-format after layerwise, new qc (eager)",
        torch.equal(qm.qc.w1_scale, m.experts.w_scale),
    )


if __name__ == "__main__":
    torch.manual_seed(0)
    run_a()
    run_b()
    run_c()
    run_d()
