"""CPU check (review12b, recall v10b): a module of the FlintNvfp4Experts pattern
(vllm/models/flint/ops/moe.py:911-951) under vLLM 0.33.0's layerwise reload.

Its own load_weights copies into ``param.data[e]`` directly, repacks into a
container once every name was seen (``_loaded_names`` is never cleared) and then
deletes its parameters. Question: does a layerwise reload rebuild the container
(new storage, real) or raise (not real)?

    PYTHONPATH=. python3 benchmarks/results/review12b/cpu_check_flint_repack_toy.py
"""

from __future__ import annotations

import torch
from torch import nn
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)


class Experts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w13_weight_scale_2 = nn.Parameter(torch.empty(2, 2), requires_grad=False)
        self.w2_weight = nn.Parameter(torch.empty(2, 3), requires_grad=False)
        self._loaded_names: set[str] = set()
        self.weights: tuple[torch.Tensor, ...] | None = None

    def load_weights(self, weights):
        for name, w in weights:
            param = getattr(self, name)
            param.data.copy_(w)
            self._loaded_names.add(name)
        if len(self._loaded_names) == 2:
            self._repack()

    def _repack(self) -> None:
        gs = self.w13_weight_scale_2.data
        if not torch.equal(gs[:, 0], gs[:, 1]):
            raise ValueError("global scales must match")
        self.weights = (self.w2_weight.data * 2,)
        for name in list(self._parameters):
            delattr(self, name)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.experts = Experts()

    def load_weights(self, weights):
        self.experts.load_weights(weights)


def ckpt(v: float):
    return [("w13_weight_scale_2", torch.full((2, 2), v)), ("w2_weight", torch.full((2, 3), v))]


class _Cfg:
    dtype = torch.float32
    quantization = None


model = Model()
record_metadata_for_reloading(model)
model.load_weights(ckpt(1.0))
print("after load: weights[0] =", model.experts.weights[0][0, 0].item(),
      "params left:", list(model.experts._parameters))
try:
    initialize_layerwise_reload(model)
    model.load_weights(ckpt(2.0))
    finalize_layerwise_reload(model, _Cfg())
    w = model.experts.weights[0]
    print("layerwise reload returned; weights device", w.device, "value",
          None if w.is_meta else w[0, 0].item())
except Exception as e:  # the outcome under test, reported
    print("layerwise reload raised:", type(e).__name__, str(e).splitlines()[0][:120])
