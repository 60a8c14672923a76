"""Position 26: models/deepseek_v4/amd/model.py:424 ``self.shared_w2 = shuffle_weight_a16w4(...)``.

Pattern of ``DeepseekV4HeterogeneousSharedRoutedExperts``: ``__init__`` registers
``register_buffer("shared_w2", None, persistent=False)``; the quant PWAL
(``DeepseekV4HeterogeneousMxfp4MoEMethod`` -> ``prepare_heterogeneous_shared_expert``) assigns
``self.shared_w2 = <new tensor derived from the shared expert's down_proj.weight>``.
Driven with vLLM's real layerwise reload and kernel-format reload.
"""

from __future__ import annotations

import torch
from torch import nn

from probe_lib import PatternLayer, ToyModel, initial_load, kernel_format_reload, layerwise_reload, make_param, ptr

D = 8


def make_model():
    shared = PatternLayer(lambda l: make_param(l, "weight", (D, D)), lambda l: None)

    def create(layer):
        make_param(layer, "w2_weight", (2, D, D))
        layer.register_buffer("shared_w2", None, persistent=False)

    def pwal(layer):
        layer.shared_w2 = shared.weight.detach().t().contiguous().unsqueeze(0)  # "shuffle"

    experts = PatternLayer(create, pwal)
    return ToyModel(shared=shared, experts=experts), shared, experts


def ckpt(seed):
    g = torch.Generator().manual_seed(seed)
    return {"shared.weight": torch.rand(D, D, generator=g), "experts.w2_weight": torch.rand(2, D, D, generator=g)}


if __name__ == "__main__":
    model, shared, experts = make_model()
    c0, c1 = ckpt(0), ckpt(1)
    initial_load(model, c0)
    sw0 = experts.shared_w2
    print("initial: shared_w2 is a non-persistent buffer:", "shared_w2" in experts._buffers,
          "shared_w2" in experts._non_persistent_buffers_set)
    try:
        layerwise_reload(model, c1)
        print("layerwise: completed; shared_w2 ptr kept:", ptr(experts.shared_w2) == ptr(sw0),
              "| fresh:", torch.equal(experts.shared_w2[0], c1["shared.weight"].t()))
    except Exception as e:
        print("layerwise: RAISED", type(e).__name__, e)

    model, shared, experts = make_model()
    initial_load(model, c0)
    new = torch.rand(D, D, generator=torch.Generator().manual_seed(2))
    kernel_format_reload(model, {"shared.weight": new})
    print("kernel-format: shared.weight refilled:", torch.equal(shared.weight, new),
          "| shared_w2 fresh:", torch.equal(experts.shared_w2[0], new.t()),
          "| shared_w2 stale (== ckpt0):", torch.equal(experts.shared_w2[0], c0["shared.weight"].t()))
    try:
        kernel_format_reload(model, {"experts.shared_w2": experts.shared_w2})
    except Exception as e:
        print("kernel-format cannot carry the buffer:", type(e).__name__, str(e)[:80])
