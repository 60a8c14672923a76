"""Probe for position 36 (kimi_k3 .../cutedsl/mla/prepared.py:153 `weights`).

`PreparedMla.__init__` (built once, by the model state, after loading) keeps references
to `attention.W_UK_T`, `attention.W_UV`, `q_b_proj.weight`, the norms and the two
non-persistent buffers `_q_scale_inv` / `_k_scale_inv` that
`MultiHeadLatentAttention.process_weights_after_loading` registers.  This toy deferred
attention layer (an `AttentionLayerBase`) uses vLLM's real `BaseKVCacheMethod` for the
checkpoint q/k/v scales, the real `replace_parameter` for `W_UK_T`, and registers
`_k_scale_inv` / `_q_scale_inv` exactly as kimi_k3/nvidia/mla.py:475-480 does. It then
runs vLLM's layerwise reload with new weights and new k/q scales, and compares the
references the once-built container holds with the layer's live values.

Run with: python3 probe_deferred_attn_scale_inv.py
"""

from types import SimpleNamespace

import torch
from torch import nn
from vllm.model_executor.layers.attention.attention import set_default_quant_scales
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.layers.quantization.kv_cache import BaseKVCacheMethod
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import replace_parameter


class KvB(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(8, 4), requires_grad=False)
        self.weight.weight_loader = default_weight_loader


class ToyMla(nn.Module, AttentionLayerBase):
    def __init__(self) -> None:
        super().__init__()
        self.kv_cache_dtype = "fp8"
        self.kv_b_proj = KvB()
        set_default_quant_scales(self, register_buffer=True)
        self.quant_method = BaseKVCacheMethod(None)
        self.quant_method.create_weights(self)

    def get_attn_backend(self):
        return None

    def get_kv_cache_spec(self, vllm_config):
        return None

    def process_weights_after_loading(self, act_dtype: torch.dtype) -> None:
        # kimi_k3/nvidia/mla.py:459-480, shapes reduced
        replace_parameter(self, "W_UK_T", self.kv_b_proj.weight.t() * 1.0)
        self.register_buffer(
            "_q_scale_inv", self._q_scale.reciprocal().reshape(1), persistent=False
        )
        self.register_buffer(
            "_k_scale_inv", self._k_scale.reciprocal().reshape(1), persistent=False
        )


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = ToyMla()

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        for name, w in weights:
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
        return {n for n, _ in weights}


def ckpt(w: float, k: float, q: float):
    return [
        ("attn.kv_b_proj.weight", torch.full((8, 4), w)),
        ("attn.k_scale", torch.tensor(k)),
        ("attn.v_scale", torch.tensor(k)),
        ("attn.q_scale", torch.tensor(q)),
    ]


def main() -> None:
    m = Model()
    record_metadata_for_reloading(m)
    m.load_weights(ckpt(1.0, 0.5, 0.25))
    a = m.attn
    a.quant_method.process_weights_after_loading(a)
    a.process_weights_after_loading(torch.float32)
    prepared = (a.W_UK_T, a._q_scale_inv, a._k_scale_inv)  # PreparedMla.weights, once
    ptrs = [t.data_ptr() for t in prepared]
    print(
        "after load : W_UK_T",
        a.W_UK_T[0, 0].item(),
        "q_inv",
        a._q_scale_inv.item(),
        "k_inv",
        a._k_scale_inv.item(),
    )

    initialize_layerwise_reload(m)
    m.load_weights(ckpt(2.0, 0.125, 0.0625))
    finalize_layerwise_reload(m, SimpleNamespace(dtype=torch.float32))
    print(
        "layer after reload (w=2, k=0.125, q=0.0625): W_UK_T",
        a.W_UK_T[0, 0].item(),
        "q_inv",
        a._q_scale_inv.item(),
        "k_inv",
        a._k_scale_inv.item(),
        "_k_scale_float",
        a._k_scale_float,
    )
    print(
        "container refs: W_UK_T is live param:",
        prepared[0] is a.W_UK_T,
        "value",
        prepared[0][0, 0].item(),
        "ptr kept",
        prepared[0].data_ptr() == ptrs[0],
    )
    print(
        "container refs: _q_scale_inv is live buffer:",
        prepared[1] is a._q_scale_inv,
        "value",
        prepared[1].item(),
    )
    print(
        "container refs: _k_scale_inv is live buffer:",
        prepared[2] is a._k_scale_inv,
        "value",
        prepared[2].item(),
    )


if __name__ == "__main__":
    main()
