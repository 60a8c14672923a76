"""CPU toy checks for three recall-v10 verdicts, with vLLM 0.33.0's own reload functions.

    PYTHONPATH=. python3 benchmarks/results/review12a/cpu_check_v10_toys.py

Each toy copies the pattern of one drawn store (not the store itself: the real kernels need a
GPU, ROCm or a CPU extension not built here) and runs the real layerwise reload
(initialize_layerwise_reload / weight loaders / finalize_layerwise_reload) and a kernel-format
reload (get_parameter_for_reload(...).copy_, as reload_weights(is_checkpoint_format=False)).

- A, fused_moe/oracle/fp8.py:793 g1_alphas: quant-method PWAL registers a derived parameter
  and a config keeps `layer.g1_alphas`; after a layerwise reload the config holds the reload
  temporary, and a kernel-format reload after it refills only the kept parameter.
- B, deepseek_v4/amd/mega_moe.py:155,161 data: model-level PWAL re-lays the registered weights
  out in place (`.data = shuffle(...)`); the weight keeps its shape, the scale becomes 2-D. A
  layerwise reload copies the new checkpoint-layout weight into the kept storage unshuffled,
  then raises at the scale's copy-back (3-D temporary into the 2-D kept scale); a
  kernel-format reload refills the kept scale in place.
- C, layers/utils.py:577 _cpu_unpacked_conv_weight: quant-method PWAL stashes an unpacked copy
  and packs the weight in place; a kernel-format reload refills the packed weight only.
"""

from __future__ import annotations

import logging

import torch
from torch import nn

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase
from vllm.model_executor.model_loader.reload import layerwise
from vllm.model_executor.model_loader.reload.inplace import get_parameter_for_reload
from vllm.model_executor.model_loader.weight_utils import default_weight_loader

log = logging.getLogger("cpu_check_v10")


def _param(*shape: int) -> nn.Parameter:
    p = nn.Parameter(torch.zeros(*shape), requires_grad=False)
    p.weight_loader = default_weight_loader
    return p


def _load(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """What a model's load_weights does: each parameter's weight_loader."""
    for name, w in weights.items():
        p = model.get_parameter(name)
        p.weight_loader(p, w)


def _layerwise_reload(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    layerwise.initialize_layerwise_reload(model)
    _load(model, weights)
    layerwise.finalize_layerwise_reload(model, None)


def _kernel_format_reload(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    for name, w in weights.items():
        get_parameter_for_reload(model, name).copy_(w)


# --- A: derived parameter registered in quant-method PWAL, kept by a config -------------
class ToyFp8Method(QuantizeMethodBase):
    def create_weights(self, layer, *args, **kwargs):
        layer.register_parameter("w13_weight_scale", _param(4))
        layer.register_parameter("w13_input_scale", _param(4))

    def apply(self, layer, *args, **kwargs):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        g1 = layer.w13_weight_scale * layer.w13_input_scale  # oracle/fp8.py:790
        layer.register_parameter("g1_alphas", nn.Parameter(g1, requires_grad=False))
        self.config_g1_alphas = layer.g1_alphas  # oracle/fp8.py:799, held by the quant config

    def kernel(self) -> torch.Tensor:  # the experts read quant_config.g1_alphas
        return self.config_g1_alphas


class ToyExperts(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = ToyFp8Method()
        self.quant_method.create_weights(self)


def check_a() -> dict[str, object]:
    model = nn.Sequential()
    model.add_module("experts", ToyExperts())
    layerwise.record_metadata_for_reloading(model)
    e = model.experts
    _load(model, {"experts.w13_weight_scale": torch.full((4,), 2.0),
                  "experts.w13_input_scale": torch.full((4,), 3.0)})
    e.quant_method.process_weights_after_loading(e)
    kept = e.g1_alphas
    first_is_kept = e.quant_method.kernel() is kept
    _layerwise_reload(model, {"experts.w13_weight_scale": torch.full((4,), 5.0),
                              "experts.w13_input_scale": torch.full((4,), 7.0)})
    after_layerwise = {
        "kept_is_registered": e.g1_alphas is kept,
        "kept_value": kept[0].item(),
        "config_is_kept": e.quant_method.kernel() is kept,
        "config_value": e.quant_method.kernel()[0].item(),
    }
    # kernel-format reload: every runtime name, already processed (g1 = 11 * 13)
    _kernel_format_reload(model, {"experts.w13_weight_scale": torch.full((4,), 11.0),
                                  "experts.w13_input_scale": torch.full((4,), 13.0),
                                  "experts.g1_alphas": torch.full((4,), 143.0)})
    return {"first_load_config_is_kept": first_is_kept, "after_layerwise": after_layerwise,
            "after_kernel_format": {"kept_value": kept[0].item(),
                                    "config_value": e.quant_method.kernel()[0].item()}}


# --- B: model-level PWAL re-lays the registered weights out in place ----------------------
class ToyMegaExperts(nn.Module):  # no quant_method, like DeepseekV4AiterMegaMoEExperts
    def __init__(self):
        super().__init__()
        self.w13_weight = _param(2, 2, 2)
        self.w13_weight_scale = _param(2, 2, 2)
        self._runtimes: list[int] = []

    def finalize_weights(self) -> None:  # mega_moe.py:148-163
        if self._runtimes:
            return
        # mega_moe.py:152, shuffle_weight_a16w4 keeps the shape (view(*src.shape))
        self.w13_weight.data = self.w13_weight.data.flip(-1)
        # mega_moe.py:155, shuffle_scale_a16w4 of a 2-D view returns the 2-D shape
        self.w13_weight_scale.data = self.w13_weight_scale.data.view(-1, 2).flip(-1)
        self._runtimes = [1]


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = ToyMegaExperts()

    def process_weights_after_loading(self) -> None:  # model-level, never rerun by reload
        self.experts.finalize_weights()


def check_b() -> dict[str, object]:
    model = ToyModel()
    layerwise.record_metadata_for_reloading(model)
    e = model.experts
    _load(model, {"experts.w13_weight": torch.arange(8.0).view(2, 2, 2),
                  "experts.w13_weight_scale": torch.arange(8.0).view(2, 2, 2)})
    model.process_weights_after_loading()
    kept_w, kept_s = e.w13_weight, e.w13_weight_scale
    out: dict[str, object] = {"scale_shape_after_first_load": tuple(kept_s.shape)}
    try:
        _layerwise_reload(model, {"experts.w13_weight": torch.arange(8.0).view(2, 2, 2) + 10,
                                  "experts.w13_weight_scale":
                                  torch.arange(8.0).view(2, 2, 2) + 10})
        out["layerwise"] = "completed"
    except RuntimeError as exc:
        out["layerwise"] = f"RuntimeError: {exc}"
    out["kept_weight_after (expected shuffled [[11, 10], ...])"] = kept_w.tolist()
    # a fresh toy for the kernel-format path (runtime-format tensors, no PWAL)
    model = ToyModel()
    layerwise.record_metadata_for_reloading(model)
    e = model.experts
    _load(model, {"experts.w13_weight": torch.arange(8.0).view(2, 2, 2),
                  "experts.w13_weight_scale": torch.arange(8.0).view(2, 2, 2)})
    model.process_weights_after_loading()
    kept_s = e.w13_weight_scale
    new_s = (torch.arange(8.0) + 20).view(-1, 2).flip(-1)
    _kernel_format_reload(model, {"experts.w13_weight_scale": new_s})
    out["kernel_format_scale_refilled_in_place"] = (
        e.w13_weight_scale is kept_s and torch.equal(kept_s, new_s))
    return out


# --- C: unpacked copy stashed next to a weight packed in place ----------------------------
class ToyConvMethod(QuantizeMethodBase):
    def create_weights(self, layer, *args, **kwargs):
        layer.register_parameter("weight", _param(4))

    def apply(self, layer, *args, **kwargs):
        raise NotImplementedError

    def process_weights_after_loading(self, layer):
        unpacked = layer.weight.contiguous().clone()  # utils.py:570-575
        layer._cpu_unpacked_conv_weight = unpacked  # utils.py:577
        layer.weight.data = unpacked.flip(0)  # utils.py:578, stands for the weight pack


class ToyConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant_method = ToyConvMethod()
        self.quant_method.create_weights(self)


def check_c() -> dict[str, object]:
    model = nn.Sequential()
    model.add_module("conv1d", ToyConv())
    layerwise.record_metadata_for_reloading(model)
    c = model.conv1d
    _load(model, {"conv1d.weight": torch.arange(4.0)})
    c.quant_method.process_weights_after_loading(c)
    _layerwise_reload(model, {"conv1d.weight": torch.arange(4.0) + 10})
    after_layerwise = {"packed": c.weight.tolist(),
                       "unpacked": c._cpu_unpacked_conv_weight.tolist()}
    # kernel-format: the runtime (packed) weight of checkpoint [20, 21, 22, 23]
    _kernel_format_reload(model, {"conv1d.weight": (torch.arange(4.0) + 20).flip(0)})
    return {"after_layerwise": after_layerwise,
            "after_kernel_format": {"packed": c.weight.tolist(),
                                    "unpacked (expected [20, 21, 22, 23])":
                                    c._cpu_unpacked_conv_weight.tolist()}}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name, check in (("A oracle/fp8.py:793 g1_alphas", check_a),
                        ("B deepseek_v4/amd/mega_moe.py:155,161 data", check_b),
                        ("C layers/utils.py:577 _cpu_unpacked_conv_weight", check_c)):
        log.info("%s: %s", name, check())


if __name__ == "__main__":
    main()
