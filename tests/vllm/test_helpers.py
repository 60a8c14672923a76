"""refill_derived, keep_constants and replace_parameter: values, kept addresses, replacement."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import nn

from vllm_integration.helpers import keep_constants, refill_derived, replace_parameter

pytestmark = pytest.mark.vllm


@dataclass(frozen=True)
class Desc:
    scale: torch.Tensor | None = None


class Experts:
    kept_constants = ("ab_strides1", "c_strides2", "ab_strides2")

    def __init__(self, e: int, k: int, n: int):
        self.ab_strides1 = torch.full((e,), k, dtype=torch.int64)
        self.c_strides2 = self.ab_strides1
        self.ab_strides2 = torch.full((e,), n, dtype=torch.int64)
        self.scratch = torch.zeros(e)  # not a kept constant


class Fallback:
    """Like vLLM's FallbackExperts (TritonOrCutlassExperts): wraps two experts objects."""

    def __init__(self, experts: Experts, fallback: Experts):
        self.experts, self.fallback_experts = experts, fallback


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.arange(6.0).reshape(2, 3), requires_grad=False)
        self.register_buffer("inv", torch.ones(3), persistent=False)


# ---- refill_derived ----------------------------------------------------------------------------

def test_refill_derived_copies_into_buffer_attribute_and_frozen_descriptor():
    layer, desc = Layer(), Desc(scale=torch.zeros(3))
    layer.attr = torch.zeros(2)
    held = {"inv": layer.inv, "attr": layer.attr, "scale": desc.scale}
    ptrs = {k: t.data_ptr() for k, t in held.items()}
    out_buf = refill_derived(layer, "inv", torch.tensor([1.0, 2.0, 3.0]))
    out_attr = refill_derived(layer, "attr", torch.tensor([4.0, 5.0]))
    out_desc = refill_derived(desc, "scale", torch.tensor([6.0, 7.0, 8.0]))
    assert out_buf is held["inv"] and layer.inv is held["inv"]
    assert out_attr is held["attr"] and out_desc is held["scale"] and desc.scale is out_desc
    assert {k: t.data_ptr() for k, t in held.items()} == ptrs
    assert layer.inv.tolist() == [1.0, 2.0, 3.0] and layer.attr.tolist() == [4.0, 5.0]
    assert desc.scale.tolist() == [6.0, 7.0, 8.0]
    assert "inv" in layer._non_persistent_buffers_set  # persistence kept


def test_refill_derived_replaces_on_shape_or_dtype_change_and_never_makes_a_parameter():
    layer = Layer()
    old = layer.inv
    new = torch.arange(5.0)
    assert refill_derived(layer, "inv", new) is new and layer.inv is new
    assert "inv" in layer._buffers and "inv" in layer._non_persistent_buffers_set
    as_int = torch.arange(5)
    assert refill_derived(layer, "inv", as_int) is as_int  # dtype change: replaced
    assert old.data_ptr() != layer.inv.data_ptr()
    fresh = refill_derived(layer, "brand_new", torch.ones(2))
    assert layer.brand_new is fresh and not isinstance(fresh, nn.Parameter)
    assert "brand_new" not in layer._parameters and "brand_new" not in layer._buffers
    param_in = nn.Parameter(torch.ones(4), requires_grad=False)
    out = refill_derived(layer, "from_param", param_in)
    assert not isinstance(out, nn.Parameter) and out.data_ptr() == param_in.data_ptr()


def test_refill_derived_keeps_a_held_parameter_object():
    layer = Layer()
    weight, ptr = layer.weight, layer.weight.data_ptr()
    assert refill_derived(layer, "weight", torch.ones(2, 3)) is weight
    assert weight.data_ptr() == ptr and weight.sum() == 6
    assert refill_derived(layer, "weight", torch.ones(3, 3)) is weight  # .data rebound
    assert weight.shape == (3, 3) and layer.weight is weight


def test_refill_derived_same_object_and_none():
    layer = Layer()
    assert refill_derived(layer, "inv", layer.inv) is layer.inv
    assert refill_derived(layer, "inv", None) is None and layer.inv is None


# ---- keep_constants ----------------------------------------------------------------------------

def _layer_with(experts: object) -> nn.Module:
    layer = Layer()
    layer.quant_method = type("QM", (), {})()
    layer.quant_method.moe_kernel = type("Kernel", (), {})()
    layer.quant_method.moe_kernel.fused_experts = experts
    return layer


def test_keep_constants_keeps_storage_across_rebuilds_and_aliases():
    first = Experts(4, 16, 8)
    layer = _layer_with(first)
    assert keep_constants(layer) == 2  # c_strides2 is ab_strides1: one tensor
    kept = {n: getattr(first, n) for n in Experts.kept_constants}
    ptrs = {n: t.data_ptr() for n, t in kept.items()}
    assert first.c_strides2 is first.ab_strides1 is layer._kept_ab_strides1

    rebuilt = Experts(4, 32, 8)  # the next post-load step builds a new object (new values)
    layer.quant_method.moe_kernel.fused_experts = rebuilt
    keep_constants(layer)
    for name, tensor in kept.items():
        assert getattr(rebuilt, name) is tensor and tensor.data_ptr() == ptrs[name]
    assert rebuilt.c_strides2 is rebuilt.ab_strides1
    assert first.ab_strides1.tolist() == [32] * 4  # the startup object sees the new values
    assert rebuilt.scratch is not first.scratch  # undeclared: left alone


def test_keep_constants_recurses_into_fallback_wrappers():
    inner, fallback = Experts(2, 8, 4), Experts(2, 8, 4)
    layer = _layer_with(Fallback(inner, fallback))
    assert keep_constants(layer) == 4
    assert inner.ab_strides1 is layer._kept_experts_ab_strides1
    assert fallback.ab_strides1 is layer._kept_fallback_experts_ab_strides1
    assert inner.ab_strides1 is not fallback.ab_strides1
    startup = (inner.ab_strides2, fallback.ab_strides2)

    wrapper = Fallback(Experts(2, 8, 6), Experts(2, 8, 10))
    keep_constants(layer, wrapper)
    assert (wrapper.experts.ab_strides2, wrapper.fallback_experts.ab_strides2) == startup
    assert startup[0].tolist() == [6, 6] and startup[1].tolist() == [10, 10]


def test_keep_constants_without_experts_is_a_no_op():
    assert keep_constants(Layer()) == 0


# ---- replace_parameter -------------------------------------------------------------------------

def test_replace_parameter_same_layout_copies_and_returns_the_kept_parameter():
    layer = Layer()
    layer.weight.weight_loader = "loader"
    old, ptr = layer.weight, layer.weight.data_ptr()
    new = torch.full((2, 3), 7.0)
    new.is_shuffled = True
    new.weight_loader = "other"
    out = replace_parameter(layer, "weight", new)
    assert out is old is layer.weight and out.data_ptr() == ptr
    assert out.sum() == 42 and out.is_shuffled and out.weight_loader == "loader"


def test_replace_parameter_transpose_rewrites_the_kept_storage():
    layer = Layer()
    old, ptr = layer.weight, layer.weight.data_ptr()
    replacement = torch.arange(6.0).reshape(3, 2) + 10
    out = replace_parameter(layer, "weight", replacement.t().contiguous().t())  # (3,2) view
    assert out is old and out.data_ptr() == ptr and out.shape == (3, 2)
    assert torch.equal(out, replacement)
    view = replace_parameter(layer, "weight", layer.weight.t())  # a view of the kept storage
    assert view is old and view.data_ptr() == ptr and view.shape == (2, 3)


def test_replace_parameter_replaces_on_size_change_and_registers_when_missing():
    layer = Layer()
    old = layer.weight
    out = replace_parameter(layer, "weight", torch.ones(4, 4))
    assert out is old and out.shape == (4, 4)  # object kept, storage replaced
    made = replace_parameter(layer, "g1_alphas", torch.ones(3))
    assert isinstance(made, nn.Parameter) and layer.g1_alphas is made
    assert replace_parameter(layer, "g1_alphas", None) is None and layer.g1_alphas is None


def test_replace_parameter_matches_vllm_on_values():
    vllm_utils = pytest.importorskip("vllm.model_executor.utils")
    for new in (torch.full((2, 3), 3.0), torch.ones(4), torch.arange(6.0).reshape(3, 2)):
        ours, theirs = Layer(), Layer()
        replace_parameter(ours, "weight", new.clone())
        vllm_utils.replace_parameter(theirs, "weight", new.clone())
        assert torch.equal(ours.weight, theirs.weight)
        assert type(ours.weight) is type(theirs.weight)
