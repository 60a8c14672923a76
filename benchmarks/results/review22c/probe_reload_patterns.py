"""Toy-module probes of three store patterns, on vLLM 0.33.0's own reload functions (CPU).

A. Position 31 (deepseek_v4/amd/model.py:426 `shared_w2_scale`): a buffer registered as
   `None` (non-persistent) in `__init__`, assigned a tensor derived from *another*
   module's weight inside the quant method's PWAL (`prepare_heterogeneous_shared_expert`).
   Layerwise reload, then (on a fresh model) a kernel-format reload.
B. Positions 33/34 (inkling/amd/moe.py `w13_weight`/`w2_weight`): the real
   `InklingSinkExperts.load_weight` (writes `param.data.copy_` / `param.data[...]
   .copy_`, never calls a weight_loader) under a layerwise reload.
C. Position 29 (qwen3_xpress.py:217 `_fused_buf`): the real `XPressRefinerHead`
   (fold_from_raw_ + build_fused_buffers, the tail of Qwen3XPressForCausalLM.load_weights)
   under a layerwise reload: do the buffers move, and what do they hold?

Run with: python3 probe_reload_patterns.py
"""

import traceback
from types import SimpleNamespace

import torch
from torch import nn
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import reload_weights
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

VC = SimpleNamespace(
    model_config=SimpleNamespace(quantization=None, dtype=torch.float32),
    load_config=None,
    lora_config=None,
)


def load_by_loader(model: nn.Module, weights) -> set[str]:
    params = dict(model.named_parameters())
    for name, w in weights:
        p = params[name]
        getattr(p, "weight_loader", default_weight_loader)(p, w)
    return {n for n, _ in weights}


# ---------------------------------------------------------------- A
class SharedMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.down_scale = nn.Parameter(torch.empty(4, 4), requires_grad=False)
        self.down_scale.weight_loader = default_weight_loader


class HeteroMethod(QuantizeMethodBase):
    def create_weights(self, layer, *a, **k):
        layer.w13 = nn.Parameter(torch.empty(2, 4), requires_grad=False)
        layer.w13.weight_loader = default_weight_loader

    def apply(self, layer, *a, **k):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        shared = layer._shared_ref
        # stands in for rocm_aiter_ops.shuffle_scale(shared[3]): a new tensor
        layer.shared_w2_scale = shared.down_scale.t().contiguous() * 1.0


class HeteroExperts(nn.Module):
    def __init__(self, shared: SharedMLP) -> None:
        super().__init__()
        object.__setattr__(self, "_shared_ref", shared)  # weakref.ref in vLLM
        self.quant_method = HeteroMethod()
        self.quant_method.create_weights(self)
        self.register_buffer("shared_w2_scale", None, persistent=False)


class HeteroModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.shared = SharedMLP()
        self.experts = HeteroExperts(self.shared)

    def load_weights(self, weights):
        return load_by_loader(self, weights)


def probe_a() -> None:
    print("=== A: None-registered non-persistent buffer set in quant PWAL (pos 31)")

    def ck(s):
        return [
            ("experts.w13", torch.full((2, 4), s)),
            ("shared.down_scale", torch.full((4, 4), s)),
        ]

    for order in ("experts-first", "shared-first"):
        m = HeteroModel()
        record_metadata_for_reloading(m)
        m.load_weights(ck(1.0))
        m.experts.quant_method.process_weights_after_loading(m.experts)
        print(
            order,
            "after load: shared_w2_scale in _buffers:",
            "shared_w2_scale" in m.experts._buffers,
            "value",
            m.experts.shared_w2_scale[0, 0].item(),
        )
        initialize_layerwise_reload(m)
        w = ck(2.0) if order == "experts-first" else ck(2.0)[::-1]
        try:
            m.load_weights(w)
            finalize_layerwise_reload(m, None)
            print(
                order, "layerwise reload: no error; value", m.experts.shared_w2_scale[0, 0].item()
            )
        except Exception as e:  # report what vLLM raises
            print(order, "layerwise reload RAISES:", type(e).__name__, e)
            print(
                "   at",
                traceback.extract_tb(e.__traceback__)[-2].name,
                "->",
                traceback.extract_tb(e.__traceback__)[-1].name,
            )
    m = HeteroModel()
    record_metadata_for_reloading(m)
    m.load_weights(ck(1.0))
    m.experts.quant_method.process_weights_after_loading(m.experts)
    reload_weights(VC, m, iter([("shared.down_scale", torch.full((4, 4), 3.0))]), None, False)
    print(
        "kernel-format reload (fresh model): shared.down_scale =",
        m.shared.down_scale[0, 0].item(),
        " shared_w2_scale =",
        m.experts.shared_w2_scale[0, 0].item(),
        "(stale if 1.0)",
    )


# ---------------------------------------------------------------- B
def probe_b() -> None:
    print("=== B: InklingSinkExperts.load_weight under layerwise reload (pos 33/34)")
    try:
        from vllm.models.inkling.amd.moe import InklingSinkExperts
    except Exception as e:
        print("import failed:", type(e).__name__, e)
        return
    S, F, D = 2, 4, 8

    class Sink(nn.Module):
        pass

    sink = InklingSinkExperts.__new__(InklingSinkExperts)
    nn.Module.__init__(sink)  # __init__ needs TP groups; set what load_weight reads
    sink.n_experts, sink.tp_rank = S, 0
    sink.w13_weight = nn.Parameter(torch.empty(S, 2 * F, D), requires_grad=False)
    sink.w2_weight = nn.Parameter(torch.empty(D, S * F), requires_grad=False)
    sink._unit = None

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sink_experts = sink

        def load_weights(self, weights):
            for key, w in weights:  # what InklingMoE.load_expert_weight does for sinks
                self.sink_experts.load_weight(key, w)
            return set()

    m = M()
    record_metadata_for_reloading(m)

    def ck(s):
        return [
            ("w13_weight", torch.full((S, 2 * F, D), s)),
            ("w2_weight", torch.full((S, D, F), s)),
        ]

    m.load_weights(ck(1.0))
    p13, p2 = sink.w13_weight.data_ptr(), sink.w2_weight.data_ptr()
    print("after load: w13", sink.w13_weight[0, 0, 0].item(), "w2", sink.w2_weight[0, 0].item())
    initialize_layerwise_reload(m)
    print("during reload w13 is meta:", sink.w13_weight.is_meta)
    m.load_weights(ck(2.0))
    finalize_layerwise_reload(m, None)
    print(
        "after layerwise reload with 2.0: w13",
        sink.w13_weight[0, 0, 0].item(),
        "w2",
        sink.w2_weight[0, 0].item(),
        "| data_ptr kept:",
        sink.w13_weight.data_ptr() == p13,
        sink.w2_weight.data_ptr() == p2,
    )


# ---------------------------------------------------------------- C
def probe_c() -> None:
    print("=== C: XPressRefinerHead._fused_buf under layerwise reload (pos 29)")
    try:
        from vllm.model_executor.models.qwen3_xpress import XPressRefinerHead
    except Exception as e:
        print("import failed:", type(e).__name__, e)
        return
    V, Hd, B, r = 64, 16, 4, 8

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.xpress_head = XPressRefinerHead(
                V, Hd, B, rank=r, mlp_hidden=16, max_num_reqs=2, topc=8
            )

        def load_weights(self, weights):
            raw = None
            params = dict(self.named_parameters())
            for name, w in weights:
                if name == "xpress_head.mix.L":
                    raw = w
                    continue
                p = params[name]
                getattr(p, "weight_loader", default_weight_loader)(p, w)
            # the tail of Qwen3XPressForCausalLM.load_weights
            self.xpress_head.fold_from_raw_(raw.to(self.xpress_head.mix_L.dtype))
            self.xpress_head.build_fused_buffers()
            return set()

    m = M()
    record_metadata_for_reloading(m)
    names = [n for n, _ in m.named_parameters() if n != "xpress_head.mix_L"]

    def ck(s):
        shapes = dict((n, p.shape) for n, p in m.named_parameters())
        return [(n, torch.full(shapes[n], s)) for n in names] + [
            ("xpress_head.mix.L", torch.full((r, B, B), s))
        ]

    m.load_weights(ck(1.0))
    buf0 = dict(m.xpress_head._fused_buf)
    ptr0 = {k: v.data_ptr() for k, v in buf0.items()}
    print(
        "after load: whc_t",
        buf0["whc_t"][0, 0].item(),
        "mix_kjc[0,1,0]",
        buf0["mix_kjc"][0, 1, 0].item(),
    )
    initialize_layerwise_reload(m)
    m.load_weights(ck(2.0))
    finalize_layerwise_reload(m, None)
    buf1 = m.xpress_head._fused_buf
    moved = {k: buf1[k].data_ptr() != ptr0[k] for k in buf1}
    print("after layerwise reload with 2.0: new dict:", buf1 is not buf0, "| moved:", moved)
    print(
        "  whc_t",
        buf1["whc_t"][0, 0].item(),
        "| in_proj.weight",
        m.xpress_head.in_proj.weight[0, 0].item(),
    )
    print(
        "  mix_kjc is_meta:",
        buf1["mix_kjc"].is_meta,
        "| mix_L[0,1,0] (kept)",
        m.xpress_head.mix_L[0, 1, 0].item(),
        "(fold of 2.0 would give",
        2.0 * 1 + 0,
        "on the lower triangle)",
    )
    print(
        "  old captured whc_t still holds",
        buf0["whc_t"][0, 0].item(),
        "(only because this probe keeps a reference)",
    )


if __name__ == "__main__":
    probe_a()
    probe_b()
    probe_c()
