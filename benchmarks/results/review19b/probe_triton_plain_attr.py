"""Positions 15, 16, 19: Triton-backend MXFP4 PWAL deletes the weight Parameters and stores
the swizzled weight as a plain layer attribute (mxfp4.py:370, mxfp4.py:855, quark_moe.py:1853).

The pattern, as in ``convert_*_mxfp4_moe_kernel_format``'s TRITON branch and the callers:
``del layer.w13_weight; del layer.w2_weight; del layer.w13_weight_scale; del layer.w2_weight_scale``
then ``layer.w2_weight = <triton_kernels.Tensor>`` (a wrapper, not a torch.Tensor), and
``replace_parameter`` for the biases. The forward reads ``layer.w2_weight`` on every call.

Question: does vLLM's layerwise reload complete, and where does ``layer.w2_weight`` point after it?
"""

from __future__ import annotations

import torch

from probe_lib import PatternLayer, ToyModel, initial_load, layerwise_reload, make_param, ptr
from vllm.model_executor.utils import replace_parameter

E, N, K = 2, 8, 16


class FakeTritonTensor:
    """Stands in for triton_kernels.tensor.Tensor: wraps storage, is not a torch.Tensor."""

    def __init__(self, storage: torch.Tensor):
        self.storage = storage


def create(layer):
    make_param(layer, "w13_weight", (E, 2 * N, K // 2), torch.uint8)
    make_param(layer, "w2_weight", (E, K, N // 2), torch.uint8)
    make_param(layer, "w13_weight_scale", (E, 2 * N, K // 32 + 1), torch.uint8)
    make_param(layer, "w2_weight_scale", (E, K, N // 32 + 1), torch.uint8)
    make_param(layer, "w13_bias", (E, 2 * N))
    make_param(layer, "w2_bias", (E, K))


def pwal(layer):
    w13 = FakeTritonTensor(layer.w13_weight.data.transpose(1, 2).contiguous())  # "swizzle"
    w2 = FakeTritonTensor(layer.w2_weight.data.transpose(1, 2).contiguous())
    b13 = layer.w13_bias.data.float()
    b2 = layer.w2_bias.data.float()
    del layer.w13_weight
    del layer.w2_weight
    del layer.w13_weight_scale
    del layer.w2_weight_scale
    layer.w13_weight = w13
    layer.w2_weight = w2
    replace_parameter(layer, "w13_bias", b13)
    replace_parameter(layer, "w2_bias", b2)


def ckpt(seed):
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n, p in PatternLayer(create, lambda l: None).named_parameters():
        if p.dtype == torch.uint8:
            out["moe." + n] = torch.randint(0, 255, p.shape, generator=g, dtype=torch.uint8)
        else:
            out["moe." + n] = torch.rand(p.shape, generator=g)
    return out


if __name__ == "__main__":
    layer = PatternLayer(create, pwal)
    model = ToyModel(moe=layer)
    c0, c1 = ckpt(0), ckpt(1)
    initial_load(model, c0)
    captured = layer.w2_weight  # what a captured graph baked: this object's storage
    p0 = ptr(captured.storage)
    print("after initial load: registered params:", sorted(n for n, _ in layer.named_parameters()))
    try:
        layerwise_reload(model, c1)
        print("layerwise reload: completed (no KeyError)")
    except Exception as e:  # report, do not hide
        print("layerwise reload: RAISED", type(e).__name__, e)
        raise
    now = layer.w2_weight
    print("w2_weight is a new object:", now is not captured)
    print("w2_weight storage moved:", ptr(now.storage) != p0)
    want = c1["moe.w2_weight"].transpose(1, 2).contiguous()
    print("eager read (layer.w2_weight) has new values:", torch.equal(now.storage, want))
    print("captured object still holds old values:",
          torch.equal(captured.storage, c0["moe.w2_weight"].transpose(1, 2).contiguous()))
    print("kept params after reload:", sorted(n for n, _ in layer.named_parameters()))
