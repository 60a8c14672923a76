"""CPU probes of vLLM 0.33.0 layerwise / kernel-format reload on toy modules.

Each probe builds a toy module of one finding's pattern, records reload
metadata with vLLM's own functions, runs a layerwise reload (initialize ->
load_weights -> finalize) and, where relevant, a kernel-format reload
(``get_parameter_for_reload(model, name).copy_(w)``), then prints what the
reader would see.  Imports: stdlib, torch, vllm only.
"""

import sys
import traceback
import types

import torch
from torch import nn
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

CFG = types.SimpleNamespace(dtype=torch.float32)


def _param(t):
    p = nn.Parameter(t, requires_grad=False)
    p.weight_loader = default_weight_loader
    return p


def _load(model, weights):
    params = dict(model.named_parameters())
    for name, w in weights:
        params[name].weight_loader(params[name], w)


def _layerwise(model, weights):
    initialize_layerwise_reload(model)
    model.load_weights(weights)
    finalize_layerwise_reload(model, CFG)


# --- P1: reference / view / copy built inside quant-method PWAL (pos 0,1,3,4,6,7,10,11)
class _Experts:
    def __init__(self, layer):
        self.scale_ref = layer.scale  # reference (QC / *_scale_val / w2_scale)
        self.weight_view = layer.weight.reshape(2, 2, 4).permute(0, 2, 1)  # bmm_weight
        self.bias_copy = layer.bias_p.detach().to(torch.float16).contiguous()  # ZenCPU
        self.gscale = 1.0 / layer.scale  # QC a1_gscale product


class _QM(QuantizeMethodBase):
    def create_weights(self, *a, **k):
        pass

    def apply(self, *a, **k):
        pass

    def process_weights_after_loading(self, layer):
        layer.experts = _Experts(layer)


class _QLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = _param(torch.zeros(4, 4))
        self.scale = _param(torch.ones(4))
        self.bias_p = _param(torch.zeros(4))
        self.quant_method = _QM()


class _M1(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = _QLayer()

    def load_weights(self, weights):
        _load(self, weights)


def probe_pwal_alias():
    print("== P1 quant-method PWAL references/views/copies (pos 0,1,3,4,6,7,10,11)")
    m = _M1()
    record_metadata_for_reloading(m)
    _load(
        m,
        [
            ("l.weight", torch.full((4, 4), 1.0)),
            ("l.scale", torch.full((4,), 2.0)),
            ("l.bias_p", torch.full((4,), 3.0)),
        ],
    )
    m.l.quant_method.process_weights_after_loading(m.l)
    kept = {n: (p, p.data_ptr()) for n, p in m.l.named_parameters()}
    e0 = m.l.experts
    g0_ptr = e0.gscale.data_ptr()
    print("initial: scale_ref is kept param:", e0.scale_ref is kept["scale"][0])
    _layerwise(
        m,
        [
            ("l.weight", torch.full((4, 4), 10.0)),
            ("l.scale", torch.full((4,), 20.0)),
            ("l.bias_p", torch.full((4,), 30.0)),
        ],
    )
    e1 = m.l.experts
    print("after layerwise: experts rebuilt:", e1 is not e0)
    print(
        "  kept params same objects/ptrs:",
        all(
            getattr(m.l, n) is p and getattr(m.l, n).data_ptr() == ptr
            for n, (p, ptr) in kept.items()
        ),
    )
    print(
        "  kept scale value:",
        m.l.scale[0].item(),
        " scale_ref is kept:",
        e1.scale_ref is m.l.scale,
        " scale_ref value:",
        e1.scale_ref[0].item(),
    )
    print(
        "  weight_view shares kept storage:",
        e1.weight_view.untyped_storage().data_ptr() == m.l.weight.untyped_storage().data_ptr(),
        " value:",
        e1.weight_view.flatten()[0].item(),
    )
    print("  bias_copy value:", e1.bias_copy[0].item())
    print("  gscale ptr moved (old graph address no longer used):", e1.gscale.data_ptr() != g0_ptr)
    # kernel-format reload after it
    for name, v in (("l.weight", 100.0), ("l.scale", 200.0), ("l.bias_p", 300.0)):
        p = get_parameter_for_reload(m, name)
        p.copy_(torch.full_like(p, v))
    print(
        "after kernel-format reload: kept scale",
        m.l.scale[0].item(),
        "| eager scale_ref",
        e1.scale_ref[0].item(),
        "| eager weight_view",
        e1.weight_view.flatten()[0].item(),
        "| eager bias_copy",
        e1.bias_copy[0].item(),
        "| gscale",
        e1.gscale[0].item(),
    )


# --- P2: loader bypass: param filled with .data[i].copy_ (pos 13)
class _Ngram(nn.Module):
    def __init__(self):
        super().__init__()
        self.oe_projection = nn.Parameter(torch.zeros(2, 3, 4), requires_grad=False)

    def load_weight(self, name, w):
        index = int(name.split(".")[-2])
        self.oe_projection.data[index].copy_(w.t())


class _M2(nn.Module):
    def __init__(self):
        super().__init__()
        self.ng = _Ngram()

    def load_weights(self, weights):
        for n, w in weights:
            self.ng.load_weight(n, w)


def probe_loader_bypass():
    print("== P2 loader bypass via .data[index].copy_ (pos 13)")
    m = _M2()
    record_metadata_for_reloading(m)
    m.load_weights(
        [
            ("post_projs.0.weight", torch.full((4, 3), 1.0)),
            ("post_projs.1.weight", torch.full((4, 3), 1.0)),
        ]
    )
    kept = m.ng.oe_projection
    print("initial value:", kept[0, 0, 0].item())
    try:
        _layerwise(
            m,
            [
                ("post_projs.0.weight", torch.full((4, 3), 5.0)),
                ("post_projs.1.weight", torch.full((4, 3), 5.0)),
            ],
        )
        print(
            "after layerwise: same object:",
            m.ng.oe_projection is kept,
            " value (checkpoint now 5.0):",
            m.ng.oe_projection[0, 0, 0].item(),
            " is_meta:",
            m.ng.oe_projection.is_meta,
        )
    except Exception:
        traceback.print_exc(file=sys.stdout)


# --- P3: non-persistent buffer registered None, set in quant PWAL (pos 18)
class _QM3(_QM):
    def process_weights_after_loading(self, layer):
        layer.shared_w2 = layer.src_ref().weight.t().contiguous() * 1.0


class _Hetero(nn.Module):
    def __init__(self, src):
        super().__init__()
        self.w2_weight = _param(torch.zeros(4))
        self.register_buffer("shared_w2", None, persistent=False)
        self.quant_method = _QM3()
        import weakref

        self.src_ref = weakref.ref(src)


class _M3(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(4, 4, bias=False)
        self.shared.weight.requires_grad_(False)
        self.shared.weight.weight_loader = default_weight_loader
        self.experts = _Hetero(self.shared)

    def load_weights(self, weights):
        _load(self, weights)


def probe_buffer_none_then_set():
    print("== P3 non-persistent buffer None at record time, set in quant PWAL (pos 18)")
    m = _M3()
    record_metadata_for_reloading(m)
    _load(m, [("shared.weight", torch.full((4, 4), 1.0)), ("experts.w2_weight", torch.ones(4))])
    m.experts.quant_method.process_weights_after_loading(m.experts)
    print(
        "initial shared_w2 in _buffers:",
        "shared_w2" in m.experts._buffers,
        " value",
        m.experts.shared_w2[0, 0].item(),
    )
    old = m.experts.shared_w2
    try:
        _layerwise(
            m,
            [
                ("shared.weight", torch.full((4, 4), 7.0)),
                ("experts.w2_weight", torch.full((4,), 7.0)),
            ],
        )
        print(
            "after layerwise: shared_w2 is old buffer:",
            m.experts.shared_w2 is old,
            " value:",
            m.experts.shared_w2[0, 0].item(),
        )
    except Exception as e:
        print("layerwise reload raised:", type(e).__name__, e)
    # kernel-format reload alone on a fresh model
    m = _M3()
    record_metadata_for_reloading(m)
    _load(m, [("shared.weight", torch.full((4, 4), 1.0)), ("experts.w2_weight", torch.ones(4))])
    m.experts.quant_method.process_weights_after_loading(m.experts)
    get_parameter_for_reload(m, "shared.weight").copy_(torch.full((4, 4), 9.0))
    print(
        "kernel-format reload of shared.weight: source",
        m.shared.weight[0, 0].item(),
        "| shared_w2 copy",
        m.experts.shared_w2[0, 0].item(),
    )


# --- P4: buffers rebuilt in model.load_weights (pos 14,16,17) and model-level PWAL (pos 19)
class _M4(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4, bias=False)
        self.a.weight.requires_grad_(False)
        self.a.weight.weight_loader = default_weight_loader
        self.fused = None
        self.model_level_copy = None

    def load_weights(self, weights):
        _load(self, weights)
        self.fused = torch.cat([self.a.weight[2:], self.a.weight[2:]]).contiguous()

    def process_weights_after_loading(self):  # model-level hook: initial load only
        self.model_level_copy = self.a.weight.detach().clone()


def probe_load_weights_rebuild_and_model_pwal():
    print("== P4 rebuilt in load_weights (pos 14,16,17) / model-level PWAL copy (pos 19)")
    m = _M4()
    record_metadata_for_reloading(m)
    m.load_weights([("a.weight", torch.full((4, 4), 1.0))])
    m.process_weights_after_loading()
    ptr0 = m.fused.data_ptr()
    _layerwise(m, [("a.weight", torch.full((4, 4), 4.0))])
    print(
        "after layerwise: fused value",
        m.fused[0, 0].item(),
        "| fused storage moved:",
        m.fused.data_ptr() != ptr0,
        "| model-level copy",
        m.model_level_copy[0, 0].item(),
        "(source now",
        m.a.weight[0, 0].item(),
        ")",
    )


if __name__ == "__main__":
    torch.manual_seed(0)
    probe_pwal_alias()
    probe_loader_bypass()
    probe_buffer_none_then_set()
    probe_load_weights_rebuild_and_model_pwal()
