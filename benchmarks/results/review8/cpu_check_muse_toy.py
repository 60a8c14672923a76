"""CPU check: MuseSpark MegaMoE's load pattern (module load_weights calling its bound
weight_loader, finalize with an early-return guard that drops w13) under vLLM's layerwise reload."""
import logging

import torch
from torch import nn
from vllm.model_executor.model_loader.reload.layerwise import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.utils import set_weight_attrs

logging.basicConfig(level=logging.WARNING)

class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        def param(*shape):
            p = nn.Parameter(torch.zeros(shape), requires_grad=False)
            set_weight_attrs(p, {"weight_loader": self.weight_loader})
            return p
        self.w13_weight = param(2, 4)
        self.w2_weight = param(2, 4)
        self._transformed_l1 = None
    def weight_loader(self, param, loaded_weight, weight_name, **kw):
        param.data.copy_(loaded_weight)
    def load_weights(self, weights):
        for name, t in weights:
            param = getattr(self, name, None)
            if param is None:
                raise AttributeError(name)
            self.weight_loader(param, t, name)
            yield name
    def finalize_weights(self):
        if self._transformed_l1 is not None:
            return
        self._transformed_l1 = self.w13_weight.data * 10
        self.w13_weight = None

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()
    def load_weights(self, weights):
        out = set(self.experts.load_weights(weights))
        self.experts.finalize_weights()
        return out

m = Model()
record_metadata_for_reloading(m)
m.load_weights([("w13_weight", torch.ones(2, 4)), ("w2_weight", torch.ones(2, 4))])
e = m.experts
print("after load: l1", e._transformed_l1[0, 0].item(), "w2", e.w2_weight[0, 0].item())
initialize_layerwise_reload(m)
print("during reload, w13_weight:", type(e.w13_weight).__name__, e.w13_weight.device)
m.load_weights([("w13_weight", torch.full((2, 4), 2.0)), ("w2_weight", torch.full((2, 4), 2.0))])
finalize_layerwise_reload(m, None)
print("after reload: l1", e._transformed_l1[0, 0].item(), "w2", e.w2_weight[0, 0].item())
