"""The runtime audit against vLLM 0.33's own objects and its own layerwise reload (CPU).

A synthetic layer built the way vLLM builds one (a ``QuantizeMethodBase`` creating params with
``weight_loader``s) whose post-load step derives ``g1 = weight_scale * input_scale`` three
ways and rebuilds a real ``CutlassExpertsFp8`` kernel (``make_fp8_moe_kernel``), reloaded by
vLLM's ``initialize_layerwise_reload`` / ``finalize_layerwise_reload``. The audit must show
what the reference measured for 0.33 (vllm-0.33-on-cpu.md §1): a plain attribute MOVES, a
non-persistent buffer goes STALE, a parameter is KEPT, and the CUTLASS strides (vllm#41670)
MOVE, and the rebuilt quant config holds the reload's temporaries instead of the kept params
(vllm PR #53509); and all green once specs declare them and the plan refills after the reload.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytest.importorskip("vllm")
pytestmark = [pytest.mark.vllm, pytest.mark.slow]

from vllm.model_executor.layers.fused_moe.activation import MoEActivation  # noqa: E402
from vllm.model_executor.layers.fused_moe.config import (  # noqa: E402
    FusedMoEConfig,
    FusedMoEParallelConfig,
    RoutingMethodType,
    fp8_w8a8_moe_quant_config,
)
from vllm.model_executor.layers.fused_moe.experts.cutlass_moe import (  # noqa: E402
    CutlassExpertsFp8,
)
from vllm.model_executor.layers.fused_moe.oracle.fp8 import (  # noqa: E402
    Fp8MoeBackend,
    make_fp8_moe_kernel,
)
from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase  # noqa: E402
from vllm.model_executor.model_loader.reload import (  # noqa: E402
    finalize_layerwise_reload,
    initialize_layerwise_reload,
    record_metadata_for_reloading,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader  # noqa: E402
from vllm.model_executor.utils import set_weight_attrs  # noqa: E402

from derivgraph import load_spec_text  # noqa: E402
from derivgraph.audit.runtime.census import take_census  # noqa: E402
from derivgraph.audit.runtime.oracle import reload_oracle  # noqa: E402

E, H, N, LAYERS = 4, 256, 128, 2
MOE = FusedMoEConfig(
    num_experts=E, experts_per_token=2, hidden_dim=H, intermediate_size=N, num_local_experts=E,
    num_logical_experts=E, activation=MoEActivation.SILU, device="cpu",
    routing_method=RoutingMethodType.Renormalize,
    moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(), in_dtype=torch.bfloat16)
EXPERTS = "quant_method.moe_kernel.impl.fused_experts"
SPECS = f"""
version: 1
specs:
  - name: g1
    target: {{module_class: SynLayer}}
    derived:
      - {{name: g1_attr, kind: attribute, formula: w13_weight_scale * w13_input_scale}}
      - {{name: g1_nonpersistent, kind: buffer, formula: w13_weight_scale * w13_input_scale}}
  - name: quant-config-scales
    description: the rebuilt quant config must alias the kept params, not reload temporaries
    target: {{module_class: SynLayer, object: quant_method.moe_quant_config}}
    derived:
      - {{name: scale, owner: quant_method.moe_quant_config._w1, kind: alias, of: w13_weight_scale}}
      - {{name: scale, owner: quant_method.moe_quant_config._w2, kind: alias, of: w2_weight_scale}}
      - {{name: scale, owner: quant_method.moe_quant_config._a1, kind: alias, of: w13_input_scale}}
      - {{name: scale, owner: quant_method.moe_quant_config._a2, kind: alias, of: w2_input_scale}}
  - name: cutlass-strides
    target: {{module_class: SynLayer, object: {EXPERTS}, object_class: CutlassExpertsFp8}}
    derived:
      - {{name: ab_strides1, owner: {EXPERTS}, kind: attribute, formula: "full([{E}], {H}, dtype=int64)"}}
      - {{name: c_strides2, owner: {EXPERTS}, kind: alias, of: ab_strides1}}
      - {{name: ab_strides2, owner: {EXPERTS}, kind: attribute, formula: "full([{E}], {N}, dtype=int64)"}}
      - {{name: c_strides1, owner: {EXPERTS}, kind: attribute, formula: "full([{E}], {2 * N}, dtype=int64)"}}
"""  # noqa: E501


class SynMethod(QuantizeMethodBase):
    """Creates checkpoint params; its post-load step derives new tensors every run."""

    def create_weights(self, layer: nn.Module) -> None:
        for name, shape in (("w13_weight_scale", (E,)), ("w2_weight_scale", (E,)),
                            ("w13_input_scale", ()), ("w2_input_scale", ())):
            p = nn.Parameter(torch.empty(shape), requires_grad=False)
            set_weight_attrs(p, {"weight_loader": default_weight_loader})
            layer.register_parameter(name, p)

    def apply(self, layer: nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None):
        return x

    def process_weights_after_loading(self, layer: nn.Module) -> None:
        g1 = layer.w13_weight_scale * layer.w13_input_scale
        layer.g1_attr = g1.clone()
        layer.register_buffer("g1_nonpersistent", g1.clone(), persistent=False)
        layer.g1_param = nn.Parameter(g1.clone(), requires_grad=False)
        qc = fp8_w8a8_moe_quant_config(w1_scale=layer.w13_weight_scale,
                                       w2_scale=layer.w2_weight_scale,
                                       a1_scale=layer.w13_input_scale,
                                       a2_scale=layer.w2_input_scale)
        self.moe_quant_config = qc
        self.moe_kernel = make_fp8_moe_kernel(qc, MOE, CutlassExpertsFp8,
                                              Fp8MoeBackend.VLLM_CUTLASS)


class SynLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.quant_method = SynMethod()
        self.quant_method.create_weights(self)


class SynModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(SynLayer() for _ in range(LAYERS))

    def load_weights(self, weights: dict[str, torch.Tensor]) -> set[str]:
        params = dict(self.named_parameters())  # new meta params during a layerwise reload
        for name, w in weights.items():
            getattr(params[name], "weight_loader", default_weight_loader)(params[name], w)
        return set(weights)


def _weights(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for i in range(LAYERS):
        for name in ("w13_weight_scale", "w2_weight_scale"):
            out[f"layers.{i}.{name}"] = 0.01 + torch.rand(E, generator=g)
        for name in ("w13_input_scale", "w2_input_scale"):
            out[f"layers.{i}.{name}"] = 0.5 + torch.rand((), generator=g)
    return out


def _cold(weights: dict[str, torch.Tensor]) -> SynModel:
    model = SynModel()
    record_metadata_for_reloading(model)
    model.load_weights(weights)
    for layer in model.layers:
        layer.quant_method.process_weights_after_loading(layer)
    return model


def _layerwise_reload(model: SynModel, weights: dict[str, torch.Tensor]) -> None:
    initialize_layerwise_reload(model)
    model.load_weights(weights)
    finalize_layerwise_reload(model, None)


def test_census_paths_of_real_cutlass_experts():
    census = take_census(_cold(_weights(0)))
    strides = census.get(f"layers.0.{EXPERTS}.ab_strides1")
    assert strides.aliases == [f"layers.0.{EXPERTS}.c_strides2"]  # one object in vLLM
    assert strides.holder == "CutlassExpertsFp8" and strides.identity.shape == (E,)
    scale = census.get("layers.0.w13_weight_scale")
    assert f"layers.0.{EXPERTS}.quant_config._w1.scale" in scale.aliases


def test_layerwise_reload_moves_attributes_and_stales_nonpersistent_buffers():
    red = reload_oracle(_cold, _layerwise_reload, _weights(0), _weights(1))
    check = red.checks[0]
    for i in range(LAYERS):
        assert f"layers.{i}.g1_attr" in check.diff.moved
        assert f"layers.{i}.{EXPERTS}.ab_strides1" in check.diff.moved
        assert f"layers.{i}.g1_nonpersistent" in check.diff.stale
        assert f"layers.{i}.g1_nonpersistent" not in check.diff.moved  # kept, not refreshed
        assert f"layers.{i}.g1_param" not in check.diff.moved + check.diff.stale  # copy-back
        assert f"layers.{i}.w13_weight_scale" not in check.diff.moved
        # the rebuilt quant config holds the reload's temporaries, not the kept params
        scale = next(f for f in check.diff.by("moved")
                     if f.path == f"layers.{i}.quant_method.moe_quant_config._w1.scale")
        assert f"the startup tensor is still held at layers.{i}.w13_weight_scale" in scale.reason
    assert set(red.undeclared()) >= set(check.diff.moved) | set(check.diff.stale)


def test_layerwise_reload_green_with_specs():
    green = reload_oracle(_cold, _layerwise_reload, _weights(0), _weights(1),
                          specs=load_spec_text(SPECS))
    assert green.ok(), green.render()
    assert green.declared == LAYERS * 10
