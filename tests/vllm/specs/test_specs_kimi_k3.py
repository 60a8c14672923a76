"""Kimi-K3's built-in vLLM 0.33.0 specs, proven against vLLM's own code on CPU: the MLA layer's
reciprocal scale buffers and host scale floats (its real post-load step on a bare instance), the
KDA decode front (vLLM's own weight loaders) and the TP16 dense down projection (vLLM's own
``PreparedDenseMLP``)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from derivgraph import compile_plan  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402
from tests.fixtures.vllm_attention_layers import _kimi_layer, _kimi_load  # noqa: E402
from tests.fixtures.vllm_spec_checks import _same  # noqa: E402

SPECS = builtin_specs()



# ---- Kimi-K3 MLA: reciprocal scale buffers and host scale floats -------------------------------

def test_kimi_k3_mla_inverse_scales_and_scale_floats() -> None:
    root = nn.Module()
    root.attn = _kimi_layer(0)
    attn = root.attn
    floats_a = {n: getattr(attn, n) for n in ("_q_scale_float", "_k_scale_float", "_v_scale_float")}
    q_inv = attn._q_scale_inv
    plan = compile_plan(root, SPECS)
    assert sorted(plan.entries) == sorted(
        ["attn._q_scale_inv", "attn._k_scale_inv", "attn._q_scale_float", "attn._k_scale_float",
         "attn._v_scale_float", "attn.W_UV", "attn.W_UK_T"])
    assert plan.entries["attn.W_UV"].adopted and plan.entries["attn.W_UK_T"].adopted
    assert plan.entries["attn._q_scale_inv"].adopted and plan.entries["attn._k_scale_inv"].adopted
    assert plan.entries["attn._q_scale_inv"].storage is q_inv
    assert torch.equal(q_inv, attn._q_scale.reciprocal().reshape(1))
    for name, value in floats_a.items():  # the engine's Python numbers, bit for bit
        assert _same(plan.entries[f"attn.{name}"].storage, value)
        assert _same(getattr(attn, name), value)
    assert "attn._k_scale_float" in plan.not_refillable()
    startup_q, startup_k = attn._q_scale_inv, attn._k_scale_inv
    ptr_q = startup_q.data_ptr()

    _kimi_load(attn, 1)  # new scales; register_buffer replaces both buffers
    assert attn._q_scale_inv is not startup_q
    fresh_q, fresh_k = attn._q_scale_inv.clone(), attn._k_scale_inv.clone()
    assert not torch.equal(fresh_q, startup_q)
    report = plan.refill(verify=True)
    assert report.moved == []
    assert sorted(report.recapture_required) == sorted(
        ["attn._q_scale_float", "attn._k_scale_float", "attn._v_scale_float"])
    assert attn._q_scale_inv is startup_q and attn._k_scale_inv is startup_k
    assert startup_q.data_ptr() == ptr_q
    assert "_q_scale_inv" in attn._non_persistent_buffers_set
    assert torch.equal(startup_q, fresh_q) and torch.equal(startup_k, fresh_k)
    cold_b = _kimi_layer(1)
    for name in ("_q_scale_inv", "_k_scale_inv", "W_UV", "W_UK_T"):
        assert torch.equal(getattr(attn, name), getattr(cold_b, name))
    for name in floats_a:
        assert _same(plan.entries[f"attn.{name}"].storage, getattr(cold_b, name))

    _kimi_load(attn, 0)  # A -> B -> A
    plan.refill(verify=True)
    cold_a = _kimi_layer(0)
    assert attn._q_scale_inv is startup_q
    for name in ("_q_scale_inv", "_k_scale_inv"):
        assert torch.equal(getattr(attn, name), getattr(cold_a, name))
    for name, value in floats_a.items():
        assert _same(plan.entries[f"attn.{name}"].storage, value)


# ---- Kimi-K3 KDA decode front: vLLM's own weight loaders fill the buffers ----------------------

def test_kimi_k3_kda_decode_front_matches_vllm_loaders() -> None:
    from vllm.models.kimi_k3.nvidia import kda as kda_mod

    from derivgraph.examples.reference_kimi_k3_kda import P, build_kda, make_kda_weights

    def vllm_loaders(conv: torch.Tensor, norm: torch.Tensor) -> tuple[Any, Any]:
        return (kda_mod._make_decode_conv1d_weight_loader([P] * 3, 1, 0, conv),
                kda_mod._make_decode_norm_weight_loader(norm))

    model = build_kda(make_kda_weights(1), loaders=vllm_loaders)
    plan = compile_plan(model, SPECS)
    keys = ["self_attn.decode_conv1d_weight", "self_attn.decode_norm_weight"]
    assert sorted(plan.entries) == keys
    assert all(plan.entries[k].adopted for k in keys)  # vLLM's loader values, bit for bit
    model.self_attn.load_weights(make_kda_weights(2), in_place=True)
    assert plan.run(verify=True).moved == []
    cold = build_kda(make_kda_weights(2), loaders=vllm_loaders)
    for k in keys:
        assert torch.equal(get_path(model, k), get_path(cold, k)), k


# ---- Kimi-K3 specialized decode, TP16: vLLM's own PreparedDenseMLP pads the down projection ----

class _PreparedProjection:
    """Stands in for the CuTe GEMM (compiled on a GPU): keeps the weight vLLM hands it."""

    def __init__(self, weight: torch.Tensor, policies: Any, **kwargs: Any) -> None:
        self.weight = weight

    def prepare(self) -> _PreparedProjection:
        return self


def _vllm_dense_root(seed: int, mp: pytest.MonkeyPatch) -> nn.Module:
    import types

    from vllm.models.kimi_k3.nvidia.specialized_decode.cutedsl.moe import dense

    from derivgraph.examples.reference_kimi_k3_dense import (
        build_kimi_k3_dense,
        make_kimi_k3_dense_weights,
    )

    mp.setattr(dense, "PreparedProjection", _PreparedProjection)
    mp.setattr(dense, "_compile_activation", lambda *args: None)
    mp.setattr(dense, "architecture", lambda device: "sm_100")
    model = build_kimi_k3_dense(make_kimi_k3_dense_weights(seed))
    mlp = model.model.layers[0].mlp
    mlp.act_fn = types.SimpleNamespace(beta=1.0, linear_beta=None)
    model.specialized_decode.feed_forward[0] = dense.PreparedDenseMLP(mlp, (8,))
    return model


def test_kimi_k3_dense_down_tp16_matches_vllm_prepared_dense_mlp() -> None:
    from derivgraph.examples.reference_kimi_k3_dense import (
        load_in_place,
        make_kimi_k3_dense_weights,
    )

    key = "specialized_decode.feed_forward.0.down.weight"
    with pytest.MonkeyPatch.context() as mp:
        model = _vllm_dense_root(1, mp)
        assert model.specialized_decode.feed_forward[0].padded == 128  # vLLM padded 40 -> 128
        plan = compile_plan(model, SPECS)
        assert sorted(plan.entries) == [key]
        assert plan.entries[key].adopted  # vLLM's padded copy, bit for bit
        startup = get_path(model, key)
        for seed in (2, 1):
            load_in_place(model, make_kimi_k3_dense_weights(seed))
            assert plan.run(verify=True).moved == []
            assert get_path(model, key) is startup
            assert torch.equal(startup, get_path(_vllm_dense_root(seed, mp), key)), seed
