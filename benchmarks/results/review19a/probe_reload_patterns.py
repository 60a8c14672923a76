"""CPU probe: vLLM 0.33.0's own reload functions on toy layers that copy the
store patterns of draw positions 0-13 (outside10 draw).

Sequence per toy model: record_metadata_for_reloading -> load ckpt0 -> PWAL
(vLLM's model_loader.utils.process_weights_after_loading) -> keep what an
"old" captured path would read -> reload_weights(is_checkpoint_format=True)
with ckpt1 -> reload_weights(is_checkpoint_format=False) with kernel-format
tensors of ckpt2.  After each step it prints, for every derived value, the
value that eager reads (the current attribute) and the value the old captured
path reads (the object saved after the first PWAL), next to the expected value.

Patterns:
  qc_ref    experts/quant-config holds a reference to layer.w_scale, built in
            quant-method PWAL (positions 3-8, 10, 11)
  qc_ref_T  same, but PWAL's replace_parameter changes shape (.data rebinds),
            as GPTQ/Marlin-style transposes do (positions 5, 8)
  mma_view  experts PWAL rebinds layer.w_scale.data, then stores a strided view
            of it (position 2: flashinfer convert_sf_to_mma_layout is a view)
  attr_copy plain attribute holding a new tensor (contiguous copy / clone)
            (positions 0, 9, 12)
  qc_gscale fresh 1/a2 tensor in the quant config, fill_(1.0), aliased by the
            experts (position 1)
  np_buffer non-persistent buffer registered in PWAL with a clone (position 13)
"""

from types import SimpleNamespace

import torch
import torch.nn as nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import record_metadata_for_reloading
from vllm.model_executor.model_loader.reload.inplace import reload_weights
from vllm.model_executor.model_loader.utils import process_weights_after_loading
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter, set_weight_attrs

torch.manual_seed(0)
E, N, K = 2, 4, 8


def _param(layer, name, shape):
    p = nn.Parameter(torch.empty(*shape), requires_grad=False)
    layer.register_parameter(name, p)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})


class Experts:
    """Stand-in for a FusedMoEExperts / kernel object rebuilt by PWAL."""

    def __init__(self, qc):
        self.qc = qc


class Method(QuantizeMethodBase):
    def __init__(self, pattern):
        self.pattern = pattern

    def create_weights(self, layer, *args, **kwargs):
        _param(layer, "w_scale", (E, N))
        _param(layer, "w_scale_2", (E,))
        _param(layer, "a2_scale", (1,))
        _param(layer, "output_scale", (1,))
        _param(layer, "w2_bias", (E, N))

    def apply(self, layer, x, bias=None):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        p = self.pattern
        if p == "qc_ref":
            replace_parameter(layer, "w_scale", layer.w_scale.data * 1.0)
            qc = SimpleNamespace(w1_scale=layer.w_scale, w2_bias=layer.w2_bias)
            self.experts = Experts(qc)
            self.experts.w1_scale_val = qc.w1_scale  # ocp_mx_emulation_moe.py:112
        elif p == "qc_ref_T":
            replace_parameter(layer, "w_scale", layer.w_scale.data.transpose(0, 1).contiguous())
            self.experts = Experts(SimpleNamespace(w1_scale=layer.w_scale))
        elif p == "mma_view":
            qc = SimpleNamespace(w1_scale=layer.w_scale)
            self.experts = Experts(qc)
            # flashinfer_b12x_moe.py:107-110
            layer.w_scale.data = (layer.w_scale.float() * layer.w_scale_2.view(-1, 1)).to(
                layer.w_scale.dtype
            )
            layer.w_scale_2.data.fill_(1.0)
            # convert_sf_to_mma_layout: a strided view of the same storage
            self.experts.w1_sf_mma = qc.w1_scale.reshape(E * N).as_strided((N, E), (1, N))
        elif p == "attr_copy":
            # xpu.py:256 bmm_scale / wNa8o8 _output_scale / inc ark_bias
            layer.bmm_scale = layer.w_scale.data.t().contiguous()
            scale = layer.output_scale.data.clone()
            delattr(layer, "output_scale")
            self._output_scale = scale
        elif p == "qc_gscale":
            qc = SimpleNamespace(a2_gscale=1.0 / layer.a2_scale)
            self.experts = Experts(qc)
            qc.a2_gscale.fill_(1.0)
            self.experts._fc2_input_scale = qc.a2_gscale
        elif p == "np_buffer":
            layer.register_buffer(
                "_scale_for_gather", layer.w_scale.detach().clone(), persistent=False
            )


class Layer(nn.Module):
    def __init__(self, pattern):
        super().__init__()
        self.quant_method = Method(pattern)
        self.quant_method.create_weights(self)


class Model(nn.Module):
    def __init__(self, pattern):
        super().__init__()
        self.layer = Layer(pattern)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        loaded = set()
        for name, w in weights:
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
            loaded.add(name)
        return loaded


def ckpt(seed):
    g = torch.Generator().manual_seed(seed)
    return {
        "layer.w_scale": torch.rand(E, N, generator=g) + 1,
        "layer.w_scale_2": torch.rand(E, generator=g) + 1,
        "layer.a2_scale": torch.rand(1, generator=g) + 1,
        "layer.output_scale": torch.rand(1, generator=g) + 1,
        "layer.w2_bias": torch.rand(E, N, generator=g),
    }


def derived(pattern, m):
    """(name, eager-read tensor) for the pattern's stored value."""
    qm = m.layer.quant_method
    if pattern == "qc_ref":
        return [("qc.w1_scale", qm.experts.qc.w1_scale), ("w1_scale_val", qm.experts.w1_scale_val),
                ("qc.w2_bias", qm.experts.qc.w2_bias)]
    if pattern == "qc_ref_T":
        return [("qc.w1_scale", qm.experts.qc.w1_scale)]
    if pattern == "mma_view":
        return [("w1_sf_mma", qm.experts.w1_sf_mma)]
    if pattern == "attr_copy":
        return [("bmm_scale", m.layer.bmm_scale), ("_output_scale", qm._output_scale)]
    if pattern == "qc_gscale":
        return [("_fc2_input_scale", qm.experts._fc2_input_scale)]
    if pattern == "np_buffer":
        return [("_scale_for_gather", m.layer._scale_for_gather)]
    raise ValueError(pattern)


def expected(pattern, name, c):
    if name in ("qc.w1_scale", "w1_scale_val", "_scale_for_gather"):
        w = c["layer.w_scale"]
        return w.t() if pattern == "qc_ref_T" else w
    if name == "qc.w2_bias":
        return c["layer.w2_bias"]
    if name == "w1_sf_mma":
        return (c["layer.w_scale"] * c["layer.w_scale_2"].view(-1, 1)).reshape(E * N).as_strided(
            (N, E), (1, N))
    if name == "bmm_scale":
        return c["layer.w_scale"].t()
    if name == "_output_scale":
        return c["layer.output_scale"]
    if name == "_fc2_input_scale":
        return torch.ones(1)
    raise ValueError(name)


def kernel_format(m, c):
    """Kernel-format tensors of checkpoint c: what PWAL would have produced."""
    out = {}
    for n, p in m.named_parameters():
        if n == "layer.w_scale" and m.layer.quant_method.pattern == "qc_ref_T":
            out[n] = c[n].t().contiguous()
        elif n == "layer.w_scale" and m.layer.quant_method.pattern == "mma_view":
            out[n] = c[n] * c["layer.w_scale_2"].view(-1, 1)
        elif n == "layer.w_scale_2" and m.layer.quant_method.pattern == "mma_view":
            out[n] = torch.ones(E)
        else:
            out[n] = c[n]
    return out


def show(tag, pattern, m, old, c):
    for (name, t), (_, o) in zip(derived(pattern, m), old):
        exp = expected(pattern, name, c)
        eager_ok = torch.allclose(t, exp)
        graph_ok = torch.allclose(o, exp)
        print(f"  {tag:<14} {name:<18} eager_ptr_same={t.data_ptr() == o.data_ptr()!s:<5} "
              f"eager_fresh={eager_ok!s:<5} old_captured_fresh={graph_ok!s:<5}")


def run(pattern):
    print(f"pattern {pattern}")
    m = Model(pattern)
    record_metadata_for_reloading(m)
    c0, c1, c2 = ckpt(0), ckpt(1), ckpt(2)
    m.load_weights(c0.items())
    mc = SimpleNamespace(word_embeddings_untied_by_checkpoint=False, dtype=torch.float32,
                         quantization=None)
    process_weights_after_loading(m, mc, torch.device("cpu"))
    old = [(n, t) for n, t in derived(pattern, m)]  # what a captured graph holds
    show("first load", pattern, m, old, c0)
    vc = SimpleNamespace(model_config=mc, load_config=None, lora_config=None)
    reload_weights(vc, m, iter(c1.items()), None, is_checkpoint_format=True)
    show("layerwise", pattern, m, old, c1)
    reload_weights(vc, m, iter(kernel_format(m, c2).items()), None, is_checkpoint_format=False)
    show("kernel-format", pattern, m, old, c2)


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)
    for pat in ("qc_ref", "qc_ref_T", "mma_view", "attr_copy", "qc_gscale", "np_buffer"):
        run(pat)
