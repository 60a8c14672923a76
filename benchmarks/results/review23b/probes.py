"""CPU probes for review23b (outside precision judge B, positions 20-39).

Toy modules of the same patterns as the drawn sites, run through vLLM 0.33.0's
own reload functions (record_metadata_for_reloading, initialize/finalize
layerwise reload, reload_weights with is_checkpoint_format=False). Where the
real helper imports on CPU it is called directly (flint ``_swizzled_scale_buffer``,
gemma4 ``_copy_target_kv_scales``).

Run: python3 benchmarks/results/review23b/probes.py > benchmarks/results/review23b/probes.out
"""

from types import SimpleNamespace

import torch
from torch import nn
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import reload_weights
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter, set_weight_attrs

VC = SimpleNamespace(
    model_config=SimpleNamespace(quantization=None, dtype=torch.float32),
    load_config=None,
    lora_config=None,
)
MC = SimpleNamespace(dtype=torch.float32)


def loaded_param(*shape, dtype=torch.float32):
    p = nn.Parameter(torch.zeros(*shape, dtype=dtype), requires_grad=False)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})
    return p


def load_by_name(model, weights):
    params = dict(model.named_parameters())
    for name, w in weights:
        p = params[name]
        getattr(p, "weight_loader", default_weight_loader)(p, w)


def layerwise(model, weights, load=None):
    initialize_layerwise_reload(model)
    (load or model.load_weights)(weights)
    finalize_layerwise_reload(model, MC)


def kernel_format(model, weights):
    reload_weights(VC, model, iter(weights), None, is_checkpoint_format=False)


def show(tag, **kv):
    print(f"[{tag}] " + ", ".join(f"{k}={v}" for k, v in kv.items()))


# ---------------------------------------------------------------------------
# A. loader bypass (inkling InklingSinkExperts.load_weight, positions 21-23)
# ---------------------------------------------------------------------------
class Sink(nn.Module):
    def __init__(self):
        super().__init__()
        self.w13_weight = nn.Parameter(torch.empty(2, 4, 3), requires_grad=False)
        self.w2_weight = nn.Parameter(torch.empty(3, 8), requires_grad=False)

    def load_weight(self, key, weight):
        if key == "w13_weight":
            self.w13_weight.data.copy_(weight)
            return
        for i, expert in enumerate(weight):
            self.w2_weight.data[:, i * 4 : (i + 1) * 4].copy_(expert)


class SinkModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.sink = Sink()

    def load_weights(self, weights):
        for name, w in weights:
            self.sink.load_weight(name, w)


def probe_a():
    torch.manual_seed(0)
    m = SinkModel()
    record_metadata_for_reloading(m)
    ck0 = {"w13_weight": torch.randn(2, 4, 3), "w2_weight": torch.randn(2, 3, 4)}
    ck1 = {k: v + 1.0 for k, v in ck0.items()}
    m.load_weights(ck0.items())
    ptr = m.sink.w13_weight.data_ptr()
    layerwise(m, ck1.items())
    show(
        "A loader-bypass layerwise",
        same_storage=m.sink.w13_weight.data_ptr() == ptr,
        w13_equals_ckpt0=torch.equal(m.sink.w13_weight, ck0["w13_weight"]),
        w13_equals_ckpt1=torch.equal(m.sink.w13_weight, ck1["w13_weight"]),
        w2_equals_ckpt1=torch.equal(
            m.sink.w2_weight, torch.cat(list(ck1["w2_weight"]), dim=1)
        ),
    )


# ---------------------------------------------------------------------------
# B. flat uint8 alias of a swizzled scale set in kernel PWAL (flint, position 20)
# ---------------------------------------------------------------------------
class SwizzleMethod(QuantizeMethodBase):
    def create_weights(self, layer):
        layer.register_parameter(
            "weight_scale", loaded_param(4, 2, dtype=torch.float8_e4m3fn)
        )

    def apply(self, layer, x):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        from vllm.models.flint.ops.linear import _swizzled_scale_buffer

        # pad to the 128x4 swizzled size flint asserts (n=4 -> 128 rows, k=32 -> 4)
        padded = torch.zeros(128, 4, dtype=torch.float8_e4m3fn)
        padded[:4, :2] = layer.weight_scale.data
        replace_parameter(layer, "weight_scale", padded)
        layer.flint_weight_scale = _swizzled_scale_buffer(layer.weight_scale, 4, 32)


class ScaleLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = SwizzleMethod()
        self.quant_method.create_weights(self)


class ScaleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ScaleLayer()

    def load_weights(self, weights):
        load_by_name(self, weights)


def probe_b():
    m = ScaleModel()
    record_metadata_for_reloading(m)
    s0 = torch.full((4, 2), 1.0).to(torch.float8_e4m3fn)
    s1 = torch.full((4, 2), 2.0).to(torch.float8_e4m3fn)
    m.load_weights([("lin.weight_scale", s0)])
    m.lin.quant_method.process_weights_after_loading(m.lin)
    kept = m.lin.weight_scale
    first_alias_ptr = m.lin.flint_weight_scale.untyped_storage().data_ptr()
    show(
        "B first load",
        alias_storage_is_kept=first_alias_ptr == kept.untyped_storage().data_ptr(),
    )
    layerwise(m, [("lin.weight_scale", s1)])
    alias = m.lin.flint_weight_scale
    show(
        "B after layerwise",
        kept_object=m.lin.weight_scale is kept,
        kept_value=float(m.lin.weight_scale.float()[0, 0]),
        alias_storage_is_kept=alias.untyped_storage().data_ptr()
        == kept.untyped_storage().data_ptr(),
        alias_byte0=int(alias[0]),
        kept_byte0=int(kept.data.view(torch.uint8).flatten()[0]),
    )
    k2 = torch.zeros(128, 4, dtype=torch.float8_e4m3fn)
    k2[:4, :2] = torch.full((4, 2), 4.0).to(torch.float8_e4m3fn)
    kernel_format(m, [("lin.weight_scale", k2)])
    alias = m.lin.flint_weight_scale
    show(
        "B after kernel-format reload",
        kept_byte0=int(kept.data.view(torch.uint8).flatten()[0]),
        alias_byte0=int(alias[0]),
        alias_stale=int(alias[0]) != int(kept.data.view(torch.uint8).flatten()[0]),
    )


# ---------------------------------------------------------------------------
# C/D. deferred attention layer: register_buffer in PWAL (Kimi K3 _q_scale_inv,
# position 25) and an fp32 copy refilled with copy_ (b12x sinks, position 29)
# ---------------------------------------------------------------------------
class Owner(nn.Module):
    def __init__(self):
        super().__init__()
        self.sinks = loaded_param(4, dtype=torch.bfloat16)
        self.attn = Attn(self.sinks)


class Attn(AttentionLayerBase, nn.Module):
    def __init__(self, sinks):
        nn.Module.__init__(self)
        self._q_scale = loaded_param(1)
        self.sinks_source = [sinks]  # a plain list: not a submodule param
        self.sinks32 = None

    def get_attn_backend(self):
        raise NotImplementedError

    def get_kv_cache_spec(self, vllm_config):
        raise NotImplementedError

    def process_weights_after_loading(self, act_dtype):
        self.register_buffer(
            "_q_scale_inv", self._q_scale.reciprocal().reshape(1), persistent=False
        )
        src = self.sinks_source[0]
        if self.sinks32 is None:
            self.sinks32 = src.to(torch.float32)
        else:
            self.sinks32.copy_(src)


class AttnModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.owner = Owner()

    def load_weights(self, weights):
        load_by_name(self, weights)


def probe_cd():
    m = AttnModel()
    record_metadata_for_reloading(m)
    w0 = [("owner.sinks", torch.full((4,), 0.5)), ("owner.attn._q_scale", torch.tensor([2.0]))]
    w1 = [("owner.sinks", torch.full((4,), 0.25)), ("owner.attn._q_scale", torch.tensor([4.0]))]
    m.load_weights(w0)
    m.owner.attn.process_weights_after_loading(torch.float32)
    attn = m.owner.attn
    prepared = (attn._q_scale_inv,)  # like PreparedMla.weights, built once
    sinks32 = attn.sinks32
    layerwise(m, w1)
    show(
        "C after layerwise",
        layer_q_scale_inv=float(attn._q_scale_inv),
        prepared_q_scale_inv=float(prepared[0]),
        prepared_is_layer_buffer=prepared[0] is attn._q_scale_inv,
    )
    show(
        "D after layerwise",
        sinks32_same_object=attn.sinks32 is sinks32,
        sinks32=float(attn.sinks32[0]),
        source=float(m.owner.sinks[0]),
    )
    kernel_format(m, [("owner.sinks", torch.full((4,), 0.125, dtype=torch.bfloat16))])
    show(
        "D after kernel-format reload",
        sinks32=float(attn.sinks32[0]),
        source=float(m.owner.sinks[0]),
        stale=float(attn.sinks32[0]) != float(m.owner.sinks[0]),
    )


# ---------------------------------------------------------------------------
# E. loader that raises once prepared + host scalar (step5 MegaMoE, position 28)
# ---------------------------------------------------------------------------
class Mega(nn.Module):
    def __init__(self):
        super().__init__()
        self.w2_input_scale = nn.Parameter(torch.zeros(2), requires_grad=False)
        set_weight_attrs(self.w2_input_scale, {"weight_loader": self.weight_loader})
        self.ready = False

    def weight_loader(self, param, loaded_weight):
        if self.ready:
            raise RuntimeError("Reloading transformed MegaMoE weights is unsupported")
        param.data.copy_(loaded_weight)

    def prepare_weights(self):
        if self.ready:
            return
        self.l2_activation_scale = self.w2_input_scale[0].item()
        self.ready = True


class MegaModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Mega()

    def load_weights(self, weights):
        load_by_name(self, weights)


def probe_e():
    m = MegaModel()
    record_metadata_for_reloading(m)
    m.load_weights([("experts.w2_input_scale", torch.tensor([0.5, 0.5]))])
    m.experts.prepare_weights()
    try:
        layerwise(m, [("experts.w2_input_scale", torch.tensor([0.25, 0.25]))])
        show("E layerwise", raised=False)
    except RuntimeError as e:
        show("E layerwise", raised=True, error=repr(str(e)))
    m2 = MegaModel()
    record_metadata_for_reloading(m2)
    m2.load_weights([("experts.w2_input_scale", torch.tensor([0.5, 0.5]))])
    m2.experts.prepare_weights()
    kernel_format(m2, [("experts.w2_input_scale", torch.tensor([0.25, 0.25]))])
    show(
        "E kernel-format reload",
        param=float(m2.experts.w2_input_scale[0]),
        host_scalar=m2.experts.l2_activation_scale,
    )


# ---------------------------------------------------------------------------
# F. derived tensor built once, guarded, inside load_weights (muse _norm_gamma,
# position 27; same shape as the load-once copies of positions 24, 36, 37)
# ---------------------------------------------------------------------------
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = loaded_param(4, dtype=torch.bfloat16)


class MuseLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Norm()
        self._transformed = None
        self._norm_gamma = None

    def load_weights(self, weights):
        load_by_name(self, weights)
        if self._transformed is not None:
            return
        self._transformed = True
        self._norm_gamma = (self.norm.weight.data.float() + 1.0).contiguous()


def probe_f():
    m = MuseLike()
    record_metadata_for_reloading(m)
    m.load_weights([("norm.weight", torch.full((4,), 0.5))])
    layerwise(m, [("norm.weight", torch.full((4,), 0.25))])
    show(
        "F after layerwise",
        norm_weight=float(m.norm.weight[0]),
        norm_gamma=float(m._norm_gamma[0]),
        stale=float(m._norm_gamma[0]) != float(m.norm.weight[0]) + 1.0,
    )


# ---------------------------------------------------------------------------
# G. gemma4 MTP copies of the target KV scales (positions 38-39): real helper
# ---------------------------------------------------------------------------
class KvAttn(nn.Module):
    def __init__(self):
        super().__init__()
        self._k_scale = loaded_param(1)
        self._v_scale = loaded_param(1)
        self._k_scale_float = 1.0
        self._v_scale_float = 1.0
        self._k_scale_cpu = torch.ones(1)
        self._v_scale_cpu = torch.ones(1)


class KvModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = KvAttn()

    def load_weights(self, weights):
        load_by_name(self, weights)


def probe_g():
    from vllm.v1.worker.gpu.spec_decode.gemma4.speculator import (
        _copy_target_kv_scales,
    )

    target, draft = KvModel(), KvAttn()
    record_metadata_for_reloading(target)
    target.load_weights(
        [("attn._k_scale", torch.tensor([0.5])), ("attn._v_scale", torch.tensor([0.75]))]
    )
    _copy_target_kv_scales(draft, target.attn)
    show(
        "G after draft setup",
        draft_v_is_draft_k=draft._v_scale is draft._k_scale,
        draft_k=float(draft._k_scale),
        draft_v=float(draft._v_scale),
    )
    layerwise(
        target,
        [("attn._k_scale", torch.tensor([0.25])), ("attn._v_scale", torch.tensor([0.125]))],
    )
    show(
        "G after target layerwise",
        target_k=float(target.attn._k_scale),
        target_v=float(target.attn._v_scale),
        draft_k=float(draft._k_scale),
        draft_v=float(draft._v_scale),
    )


if __name__ == "__main__":
    for probe in (probe_a, probe_b, probe_cd, probe_e, probe_f, probe_g):
        probe()
