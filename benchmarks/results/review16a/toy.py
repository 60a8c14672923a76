"""Shared toy-model harness for the review16a probes (vLLM 0.33.0 reload functions, CPU)."""
import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.reload.layerwise import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs


def param(*shape, dtype=torch.float32):
    p = nn.Parameter(torch.empty(*shape, dtype=dtype), requires_grad=False)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})
    return p


class ToyMethod(QuantizeMethodBase):
    """create_weights/PWAL supplied as callables."""

    def __init__(self, create, pwal):
        self._create, self._pwal = create, pwal

    def create_weights(self, layer, *a, **k):
        self._create(layer)

    def apply(self, layer, *a, **k):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        self._pwal(self, layer)


class ToyModel(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        done = set()
        for name, w in weights:
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
            done.add(name)
        return done


def first_load(model, ckpt):
    record_metadata_for_reloading(model)
    model.load_weights(ckpt.items())
    for m in model.modules():
        qm = getattr(m, "quant_method", None)
        if isinstance(qm, QuantizeMethodBase):
            qm.process_weights_after_loading(m)


def layerwise_reload(model, ckpt):
    initialize_layerwise_reload(model)
    model.load_weights(ckpt.items())
    finalize_layerwise_reload(model, None)


def kernel_format_reload(model, tensors):
    for name, w in tensors.items():
        get_parameter_for_reload(model, name).copy_(w)
