"""Shared helpers for the review19b precision probes (CPU, vLLM 0.33.0's own reload code).

Each probe builds a toy model whose layers follow the pattern of one audited store site,
then drives vLLM's real reload functions:

- initial load: ``record_metadata_for_reloading`` -> ``model.load_weights`` -> quant PWAL
  per layer (as ``model_loader.utils.process_weights_after_loading`` does) -> optional
  model-level hook;
- layerwise reload: ``initialize_layerwise_reload`` -> ``model.load_weights`` ->
  ``finalize_layerwise_reload`` (what ``reload_weights(is_checkpoint_format=True)`` runs);
- kernel-format reload: ``get_parameter_for_reload(model, name).copy_(w)`` (what
  ``reload_weights(is_checkpoint_format=False)`` runs per weight).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import (
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.utils import set_weight_attrs


def make_param(layer: nn.Module, name: str, shape, dtype=torch.float32) -> None:
    """Register a checkpoint-format parameter with vLLM's default loader."""
    p = nn.Parameter(torch.empty(*shape, dtype=dtype), requires_grad=False)
    set_weight_attrs(p, {"weight_loader": default_weight_loader})
    layer.register_parameter(name, p)


class PatternMethod(QuantizeMethodBase):
    """A quant method whose PWAL is the probe's pattern function."""

    def __init__(self, create: Callable[[nn.Module], None], pwal: Callable[[nn.Module], None]):
        self._create = create
        self._pwal = pwal

    def create_weights(self, layer, *args, **kwargs):
        self._create(layer)

    def process_weights_after_loading(self, layer):
        self._pwal(layer)

    def apply(self, layer, *args, **kwargs):
        raise NotImplementedError


class PatternLayer(nn.Module):
    def __init__(self, create, pwal):
        super().__init__()
        self.quant_method = PatternMethod(create, pwal)
        self.quant_method.create_weights(self)


class ToyModel(nn.Module):
    """Loads ``name -> tensor`` through each parameter's (possibly wrapped) loader."""

    def __init__(self, **layers: nn.Module):
        super().__init__()
        for k, v in layers.items():
            self.add_module(k, v)
        self.after_load_weights: Callable[[], None] | None = None

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        params = dict(self.named_parameters())
        loaded = set()
        for name, w in weights:
            p = params[name]
            getattr(p, "weight_loader", default_weight_loader)(p, w)
            loaded.add(name)
        if self.after_load_weights is not None:
            self.after_load_weights()
        return loaded


def initial_load(model: nn.Module, ckpt: dict[str, torch.Tensor], model_level: Callable | None = None):
    record_metadata_for_reloading(model)
    model.load_weights(ckpt.items())
    for m in model.modules():
        qm = getattr(m, "quant_method", None)
        if isinstance(qm, QuantizeMethodBase):
            qm.process_weights_after_loading(m)
    if model_level is not None:
        model_level()


def layerwise_reload(model: nn.Module, ckpt: dict[str, torch.Tensor]):
    initialize_layerwise_reload(model)
    model.load_weights(ckpt.items())
    finalize_layerwise_reload(model, None)


def kernel_format_reload(model: nn.Module, weights: dict[str, torch.Tensor]):
    for name, w in weights.items():
        get_parameter_for_reload(model, name).copy_(w)


def ptr(t) -> int:
    return t.untyped_storage().data_ptr()
