"""CPU toy (review23e): compressed_tensors.py:1256-1258, `register_buffer("_k_scale", layer.k_scale.detach())`.

A toy attention layer (AttentionLayerBase, so finalize takes the deferred-attention path) with
Attention's default scale buffers (set_default_quant_scales(register_buffer=True)) and vLLM 0.33.0's
real CompressedTensorsKVCacheMethod. Layerwise reload with vLLM's own functions: is the kept `_k_scale`
buffer (the object a graph would have captured) refilled with the new checkpoint scale?
"""
import types

import torch
from torch import nn

from vllm.model_executor.layers.attention.attention import set_default_quant_scales
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors import (
    CompressedTensorsKVCacheMethod)
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload, initialize_layerwise_reload, record_metadata_for_reloading)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader


class ToyAttention(nn.Module, AttentionLayerBase):
    def __init__(self):
        nn.Module.__init__(self)
        set_default_quant_scales(self, register_buffer=True)
        self.quant_method = CompressedTensorsKVCacheMethod(types.SimpleNamespace(kv_cache_scheme=None))
        self.quant_method.create_weights(self)

    def process_weights_after_loading(self, act_dtype):  # the deferred attention PWAL
        pass

    def get_attn_backend(self):
        raise NotImplementedError

    def get_kv_cache_spec(self, vllm_config):
        return None


def load(layer, k, v):
    for name, val in (("k_scale", k), ("v_scale", v)):
        p = getattr(layer, name)
        getattr(p, "weight_loader", default_weight_loader)(p, torch.tensor([val]))


model = nn.Module()
model.attn = ToyAttention()
record_metadata_for_reloading(model)
load(model.attn, 0.5, 0.25)
model.attn.quant_method.process_weights_after_loading(model.attn)
a = model.attn
kept = a._k_scale
print("after load: _k_scale =", kept.tolist(), "| is a buffer:", "_k_scale" in a._buffers,
      "| k_scale param deleted:", not hasattr(a, "k_scale"), "| _k_scale_float =", a._k_scale_float)

initialize_layerwise_reload(model)
load(model.attn, 2.0, 4.0)
finalize_layerwise_reload(model, types.SimpleNamespace(dtype=torch.float32))
print("layerwise reload: kept _k_scale object still registered:", a._k_scale is kept,
      "| kept value:", kept.tolist(), "| refilled to 2.0:", bool((kept == 2.0).all()),
      "| _k_scale_float =", a._k_scale_float, "(host scalar)")
