"""Judge C toy checks (CPU): layerwise reload + kernel-format reload on toy modules.

A: an alias built in quant-method PWAL (like flint_weight_scale, flint/ops/linear.py:56).
B: a loader that writes `.data.copy_` bypassing weight_loader (like inkling moe.py:314/323).
"""
import torch
from torch import nn
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload.layerwise import (
    record_metadata_for_reloading, initialize_layerwise_reload, finalize_layerwise_reload)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader


class QM(QuantizeMethodBase):
    def create_weights(self, *a, **k): pass
    def apply(self, *a, **k): pass
    def process_weights_after_loading(self, layer):
        new = nn.Parameter(layer.weight_scale.data * 1.0, requires_grad=False)  # replace_parameter-like
        layer.weight_scale = new
        layer.alias = torch.empty(0).set_(new.untyped_storage(), 0, new.shape, new.stride())


class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight_scale = nn.Parameter(torch.zeros(4), requires_grad=False)
        self.weight_scale.weight_loader = default_weight_loader
        self.quant_method = QM()


class Sink(nn.Module):
    def __init__(self):
        super().__init__()
        self.w13_weight = nn.Parameter(torch.empty(4), requires_grad=False)

    def load_weight(self, w):
        self.w13_weight.data.copy_(w)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = A()
        self.sink = Sink()

    def load_weights(self, ws):
        for n, w in ws:
            if n == "a.weight_scale":
                p = self.a.weight_scale
                p.weight_loader(p, w)
            else:
                self.sink.load_weight(w)
        return {n for n, _ in ws}


class Cfg:  # finalize only needs it for attention layers
    dtype = torch.float32


m = M()
record_metadata_for_reloading(m)
m.load_weights([("a.weight_scale", torch.full((4,), 1.0)), ("sink.w13", torch.full((4,), 1.0))])
m.a.quant_method.process_weights_after_loading(m.a)
kept = m.a.weight_scale
print("first load: alias shares kept storage:", m.a.alias.data_ptr() == kept.data_ptr())

initialize_layerwise_reload(m)
m.load_weights([("a.weight_scale", torch.full((4,), 2.0)), ("sink.w13", torch.full((4,), 2.0))])
finalize_layerwise_reload(m, Cfg())
print("after layerwise: kept param same object:", m.a.weight_scale is kept, "value", kept.tolist())
print("after layerwise: alias shares kept storage:", m.a.alias.data_ptr() == kept.data_ptr(), "alias", m.a.alias.tolist())
print("after layerwise: sink w13 (want 2.0):", m.sink.w13_weight.tolist())

get_parameter_for_reload(m, "a.weight_scale").copy_(torch.full((4,), 3.0))
print("after kernel-format: kept", m.a.weight_scale.tolist(), "alias (eager reader)", m.a.alias.tolist())
