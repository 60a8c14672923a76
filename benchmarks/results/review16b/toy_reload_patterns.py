"""Outside judge B (review16b): toy modules that mimic the store patterns of
draw positions 14-26, run through vLLM 0.33.0's own reload functions on CPU.

Run: PYTHONPATH=$PWD python3 benchmarks/results/review16b/toy_reload_patterns.py
Output: benchmarks/results/review16b/toy_reload_patterns.out
"""

from __future__ import annotations

import traceback
from types import SimpleNamespace

import torch
from torch import nn
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload.inplace import (
    get_parameter_for_reload,
    reload_weights,
)
from vllm.model_executor.model_loader.reload.layerwise import (
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

CFG = SimpleNamespace(
    model_config=SimpleNamespace(quantization="toy", dtype=torch.float32),
    load_config=None,
    lora_config=None,
)


class Method(QuantizeMethodBase):
    """A quant method whose PWAL is a callback (the pattern under test)."""

    def __init__(self, pwal):
        self._pwal = pwal

    def create_weights(self, *a, **k):  # pragma: no cover - unused
        raise NotImplementedError

    def apply(self, *a, **k):  # pragma: no cover - unused
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        self._pwal(self, layer)


class Layer(nn.Module):
    def __init__(self, pwal, names=("weight",), none_buffers=()):
        super().__init__()
        for n in names:
            self.register_parameter(n, nn.Parameter(torch.ones(4), requires_grad=False))
        for b in none_buffers:
            self.register_buffer(b, None, persistent=False)
        self.quant_method = Method(pwal)


class Model(nn.Module):
    def __init__(self, **layers):
        super().__init__()
        for k, v in layers.items():
            self.add_module(k, v)

    def load_weights(self, weights):
        loaded = set()
        for name, w in weights:
            p = self.get_parameter(name)
            getattr(p, "weight_loader", default_weight_loader)(p, w)
            loaded.add(name)
        return loaded


def first_load(model, weights):
    record_metadata_for_reloading(model)
    model.load_weights(iter(weights.items()))
    for m in model.modules():
        qm = getattr(m, "quant_method", None)
        if isinstance(qm, QuantizeMethodBase):
            qm.process_weights_after_loading(m)
    if hasattr(model, "process_weights_after_loading"):
        model.process_weights_after_loading()  # model-level PWAL: runs once


def layerwise(model, weights):
    reload_weights(CFG, model, iter(weights.items()), None, is_checkpoint_format=True)


def kernel_format(model, weights):
    for name, w in weights.items():
        get_parameter_for_reload(model, name).copy_(w)


def show(title, fn):
    print(f"\n=== {title}")
    try:
        fn()
    except Exception as e:  # a toy check: report the exception text
        print("RAISED:", type(e).__name__, e)
        last = traceback.extract_tb(e.__traceback__)[-1]
        print(f"  raised at {last.filename.split('site-packages/')[-1]}:{last.lineno}: {last.line}")


# ---- P1 (pos 15): non-persistent buffer registered in quant PWAL as a clone
def p1():
    def pwal(qm, layer):
        layer.register_buffer(
            "_gs_for_gather", layer.weight.detach().clone(), persistent=False
        )

    m = Model(l=Layer(pwal))
    first_load(m, {"l.weight": torch.full((4,), 1.0)})
    kept = m.l._gs_for_gather
    layerwise(m, {"l.weight": torch.full((4,), 2.0)})
    print("weight after layerwise:", m.l.weight.tolist())
    print("buffer after layerwise:", m.l._gs_for_gather.tolist(),
          "same object:", m.l._gs_for_gather is kept)


# ---- P2 (pos 16, 17, 21): PWAL deletes the param and stores a plain attribute
def p2():
    def pwal(qm, layer):
        w = layer.weight.data * 10  # "swizzled" kernel tensor
        del layer.weight
        layer.weight = w  # plain attribute (triton Tensor in vLLM)
        qm.precision_config = SimpleNamespace(scale=w * 0 + 3)

    m = Model(l=Layer(pwal))
    first_load(m, {"l.weight": torch.full((4,), 1.0)})
    old_w, old_pc = m.l.weight, m.l.quant_method.precision_config.scale
    old_ptr = old_w.data_ptr()
    layerwise(m, {"l.weight": torch.full((4,), 2.0)})
    print("attr after layerwise:", m.l.weight.tolist(),
          "same object:", m.l.weight is old_w,
          "old object still:", old_w.tolist(), "ptr moved:", m.l.weight.data_ptr() != old_ptr)
    print("precision_config.scale same object:",
          m.l.quant_method.precision_config.scale is old_pc)
    print("registered params:", list(m.l._parameters))


# ---- P3 (pos 14, 20, 22): container built in quant PWAL referencing params
def p3():
    def pwal(qm, layer):
        qm.qc = SimpleNamespace(w2_scale=layer.w2_scale, a1_gscale=1.0 / layer.a1)

    m = Model(l=Layer(pwal, names=("w2_scale", "a1")))
    first_load(m, {"l.w2_scale": torch.full((4,), 1.0), "l.a1": torch.full((4,), 4.0)})
    qm = m.l.quant_method
    print("initial: qc.w2_scale is kept param:", qm.qc.w2_scale is m.l.w2_scale)
    old_gs = qm.qc.a1_gscale
    layerwise(m, {"l.w2_scale": torch.full((4,), 2.0), "l.a1": torch.full((4,), 8.0)})
    print("after layerwise: qc.w2_scale is kept param:", qm.qc.w2_scale is m.l.w2_scale,
          "value:", qm.qc.w2_scale.tolist(), "a1_gscale same object:", qm.qc.a1_gscale is old_gs)
    kernel_format(m, {"l.w2_scale": torch.full((4,), 5.0)})
    print("after kernel-format: param:", m.l.w2_scale.tolist(),
          "qc.w2_scale (eager reader):", qm.qc.w2_scale.tolist())


# ---- P4 (pos 23): CPU stash of the unpacked weight, weight.data rebound to packed
def p4():
    def pwal(qm, layer):
        unpacked = layer.weight.view(2, 2).contiguous().clone()
        layer._cpu_unpacked = unpacked
        layer.weight.data = (unpacked.t().contiguous() * 1).reshape(4)  # "packed"

    m = Model(l=Layer(pwal))
    first_load(m, {"l.weight": torch.arange(4.0)})
    layerwise(m, {"l.weight": torch.arange(4.0) + 10})
    print("after layerwise: unpacked:", m.l._cpu_unpacked.flatten().tolist(),
          "packed param:", m.l.weight.tolist())
    kernel_format(m, {"l.weight": (torch.arange(4.0) + 100).view(2, 2).t().reshape(4)})
    print("after kernel-format: packed param:", m.l.weight.tolist(),
          "unpacked (reader):", m.l._cpu_unpacked.flatten().tolist())


# ---- P5 (pos 25): model-level PWAL stores an upcast copy once
def p5():
    class M5(Model):
        def process_weights_after_loading(self):
            self._gateup_scale = self.l.weight.to(torch.float64).contiguous()

    m = M5(l=Layer(lambda qm, layer: None))
    first_load(m, {"l.weight": torch.full((4,), 1.0)})
    layerwise(m, {"l.weight": torch.full((4,), 2.0)})
    print("after layerwise: param:", m.l.weight.tolist(),
          "model-level copy:", m._gateup_scale.tolist())


# ---- P6 (pos 26): None buffer at init, set to a tensor in quant PWAL
def p6():
    def pwal(qm, layer):
        layer.shared_w1 = layer.weight.detach() * 3

    m = Model(l=Layer(pwal, none_buffers=("shared_w1",)))
    first_load(m, {"l.weight": torch.full((4,), 1.0)})
    print("initial: shared_w1 is buffer:", "shared_w1" in m.l._buffers,
          m.l.shared_w1.tolist())
    show("P6a layerwise reload", lambda: layerwise(m, {"l.weight": torch.full((4,), 2.0)}))
    m2 = Model(l=Layer(pwal, none_buffers=("shared_w1",)))
    first_load(m2, {"l.weight": torch.full((4,), 1.0)})
    kernel_format(m2, {"l.weight": torch.full((4,), 7.0)})
    print("P6b kernel-format only: weight:", m2.l.weight.tolist(),
          "shared_w1 (reader):", m2.l.shared_w1.tolist())


# ---- P8 (pos 24): model.load_weights rebuilds a stacked copy
def p8():
    class M8(Model):
        def load_weights(self, weights):
            loaded = super().load_weights(weights)
            self._stack = torch.stack([self.l.weight, self.l.weight]).contiguous()
            return loaded

    m = M8(l=Layer(lambda qm, layer: None))
    record_metadata_for_reloading(m)
    m.load_weights(iter({"l.weight": torch.full((4,), 1.0)}.items()))
    old = m._stack
    layerwise(m, {"l.weight": torch.full((4,), 2.0)})
    print("after layerwise: stack:", m._stack[0].tolist(), "same object:", m._stack is old,
          "old object:", old[0].tolist())
    kernel_format(m, {"l.weight": torch.full((4,), 9.0)})
    print("after kernel-format: param:", m.l.weight.tolist(), "stack:", m._stack[0].tolist())


# ---- P7 (pos 18, 19): real oracle convert on a layer without *_weight_scale
def p7():
    import vllm.model_executor.layers.fused_moe.oracle.mxfp4 as orc

    orc._swizzle_mxfp4 = lambda w, s: (w, None, s)
    orc.PrecisionConfig = lambda **k: SimpleNamespace(**k)
    orc.FlexCtx = lambda **k: SimpleNamespace(**k)
    orc._mx_scale_kwargs = lambda s: {"weight_scale": s}
    layer = nn.Module()  # online MXFP4 registers only w13_weight / w2_weight
    layer.w13_weight = nn.Parameter(torch.zeros(2, 8, 4, dtype=torch.uint8), False)
    layer.w2_weight = nn.Parameter(torch.zeros(2, 4, 4, dtype=torch.uint8), False)
    out = orc.convert_weight_to_mxfp4_moe_kernel_format(
        mxfp4_backend=orc.Mxfp4MoeBackend.TRITON,
        layer=layer,
        w13_weight=layer.w13_weight.data,
        w2_weight=layer.w2_weight.data,
        w13_weight_scale=torch.zeros(2, 8, 2, dtype=torch.uint8),
        w2_weight_scale=torch.zeros(2, 4, 2, dtype=torch.uint8),
    )
    print("convert returned (unexpected):", type(out))


if __name__ == "__main__":
    for t, f in [("P1 pos15 non-persistent buffer", p1),
                 ("P2 pos16/17/21 plain attribute", p2),
                 ("P3 pos14/20/22 quant-PWAL container", p3),
                 ("P4 pos23 CPU unpacked stash", p4),
                 ("P5 pos25 model-level copy", p5),
                 ("P6 pos26 None buffer set in PWAL", p6),
                 ("P8 pos24 load_weights stacked copy", p8),
                 ("P7 pos18/19 online mxfp4 TRITON convert", p7)]:
        show(t, f)
