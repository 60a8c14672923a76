# ruff: noqa: E501
"""CPU toys of the store patterns judged in review13a, run through vLLM 0.33.0's
own reload functions (layerwise: record_metadata_for_reloading /
initialize_layerwise_reload / finalize_layerwise_reload; kernel format:
get_parameter_for_reload + copy_).

Patterns:
  ref   - a holder built inside quant-method PWAL keeps a reference / view of a
          layer Parameter (items 0, 3, 4, 5, 6, 8, 9, 10, 13)
  copy  - a plain layer attribute holding a fresh copy of a scale (item 1)
  clone - a quant-scheme attribute holding a clone of a checkpoint scale whose
          parameter is then deleted from the layer (items 11, 12)
  const - an experts-like object rebuilt in PWAL allocating torch.ones (item 2)
  lazy  - a lazy cache torch.cat of a weight built on first forward (item 7)
"""

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
from vllm.model_executor.utils import replace_parameter, set_weight_attrs


class Experts:
    def __init__(self, qc):
        self.quant_config = qc
        self.w1_scale_val = qc["w1_scale"]  # items 4-6 pattern
        self.const = torch.ones(4)  # item 2 pattern


class ToyMethod(QuantizeMethodBase):
    def __init__(self):
        self._input_scale = None

    def create_weights(self, layer):
        for name, shape in (("weight", (4, 8)), ("weight_scale", (4, 2)), ("input_scale", (1,))):
            p = nn.Parameter(torch.empty(shape), requires_grad=False)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})
            layer.register_parameter(name, p)

    def process_weights_after_loading(self, layer):
        # clone + delattr (items 11/12)
        self._input_scale = layer.input_scale.data.clone()
        delattr(layer, "input_scale")
        # transform a scale with replace_parameter (kept object at startup)
        replace_parameter(layer, "weight_scale", layer.weight_scale.data * 2)
        # fresh copy on a plain layer attribute (item 1)
        layer.bmm_scale = layer.weight_scale.data.t().contiguous()
        # view of a layer parameter on a plain attribute (items 0 / 3)
        layer.packed_view = layer.weight_scale.view(-1)
        # quant config + experts rebuilt in PWAL (items 4-6, 8-10, 13; item 2)
        self.moe_quant_config = {"w1_scale": layer.weight_scale}
        self.experts = Experts(self.moe_quant_config)

    def apply(self, layer, x):
        return x


class ToyLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = ToyMethod()
        self.quant_method.create_weights(self)
        self.gate = nn.Linear(8, 4, bias=False)
        self._combined = None  # item 7 pattern

    def forward(self, x):
        if self._combined is None:
            self._combined = torch.cat([self.gate.weight, self.gate.weight], 0)
        return x @ self._combined.t()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = ToyLayer()

    def forward(self, x):
        return self.layer(x)


def ckpt(seed):
    g = torch.Generator().manual_seed(seed)
    return {
        "layer.weight": torch.randn(4, 8, generator=g),
        "layer.weight_scale": torch.rand(4, 2, generator=g) + 0.5,
        "layer.input_scale": torch.rand(1, generator=g) + 0.5,
        "layer.gate.weight": torch.randn(4, 8, generator=g),
    }


def load(model, weights):
    for name, w in weights.items():
        p = get_parameter_for_reload(model, name)
        getattr(p, "weight_loader", default_weight_loader)(p, w)


def snapshot(model):
    layer, qm = model.layer, model.layer.quant_method
    return {
        "kept_scale": layer.weight_scale,
        "ref": qm.moe_quant_config["w1_scale"],
        "experts_ref": qm.experts.w1_scale_val,
        "view": layer.packed_view,
        "copy": layer.bmm_scale,
        "clone": qm._input_scale,
        "const": qm.experts.const,
        "lazy": layer._combined,
    }


def main():
    torch.manual_seed(0)
    model = Model()
    record_metadata_for_reloading(model)
    w_a = ckpt(1)
    load(model, w_a)
    model.layer.quant_method.process_weights_after_loading(model.layer)
    model(torch.zeros(1, 8))  # first forward builds the lazy cache
    s0 = snapshot(model)
    ptr0 = {k: v.data_ptr() for k, v in s0.items()}
    print("startup: ref is kept param:", s0["ref"] is s0["kept_scale"])

    # ---- layerwise reload (checkpoint format) with different weights ----
    w_b = ckpt(2)
    initialize_layerwise_reload(model)
    load(model, w_b)
    finalize_layerwise_reload(model, None)
    model(torch.zeros(1, 8))
    s1 = snapshot(model)
    exp_scale = w_b["layer.weight_scale"] * 2
    print("\n== after layerwise reload (weights B) ==")
    print(
        "kept param object unchanged:",
        s1["kept_scale"] is s0["kept_scale"],
        "| kept storage unchanged:",
        s1["kept_scale"].data_ptr() == ptr0["kept_scale"],
        "| kept value new:",
        torch.equal(s1["kept_scale"], exp_scale),
    )
    for k in ("ref", "experts_ref", "view", "copy", "clone", "const", "lazy"):
        print(f"{k:12s} same storage as startup: {s1[k].data_ptr() == ptr0[k]!s:5s}", end=" ")
        if k in ("ref", "experts_ref"):
            print(
                "| is kept param:",
                s1[k] is s1["kept_scale"],
                "| value new:",
                torch.equal(s1[k], exp_scale),
            )
        elif k == "view":
            print(
                "| views kept storage:",
                s1[k].data_ptr() == s1["kept_scale"].data_ptr(),
                "| value new:",
                torch.equal(s1[k], exp_scale.view(-1)),
            )
        elif k == "copy":
            print("| value new:", torch.equal(s1[k], exp_scale.t()))
        elif k == "clone":
            print("| value new:", torch.equal(s1[k], w_b["layer.input_scale"]))
        elif k == "lazy":
            print(
                "| value new:",
                torch.equal(s1[k][:4], w_b["layer.gate.weight"]),
                "| still weights A:",
                torch.equal(s1[k][:4], w_a["layer.gate.weight"]),
            )
        else:
            print()

    # ---- kernel-format reload after it ----
    w_c = torch.rand(4, 2) + 3.0
    get_parameter_for_reload(model, "layer.weight_scale").copy_(w_c)
    print("\n== after kernel-format reload of layer.weight_scale (values C) ==")
    print("kept value C:", torch.equal(model.layer.weight_scale, w_c))
    s2 = snapshot(model)
    print(
        "ref (QC, built in reload PWAL) value C:",
        torch.equal(s2["ref"], w_c),
        "-> stale" if not torch.equal(s2["ref"], w_c) else "",
    )
    print("experts_ref value C:", torch.equal(s2["experts_ref"], w_c))
    print("view value C:", torch.equal(s2["view"], w_c.view(-1)))
    print("copy value C^T:", torch.equal(s2["copy"], w_c.t()))
    try:
        get_parameter_for_reload(model, "layer.input_scale").copy_(torch.ones(1))
        print("input_scale kernel-format reload: accepted")
    except AttributeError as e:
        print("input_scale kernel-format reload raises:", type(e).__name__, str(e)[:80])

    # ---- kernel-format reload with no layerwise before it (fresh model) ----
    torch.manual_seed(0)
    m2 = Model()
    record_metadata_for_reloading(m2)
    load(m2, w_a)
    m2.layer.quant_method.process_weights_after_loading(m2.layer)
    get_parameter_for_reload(m2, "layer.weight_scale").copy_(w_c)
    qm = m2.layer.quant_method
    print("\n== kernel-format reload only (no layerwise before) ==")
    print(
        "ref value C:",
        torch.equal(qm.moe_quant_config["w1_scale"], w_c),
        "| view value C:",
        torch.equal(m2.layer.packed_view, w_c.view(-1)),
        "| copy value C^T:",
        torch.equal(m2.layer.bmm_scale, w_c.t()),
    )


if __name__ == "__main__":
    main()
