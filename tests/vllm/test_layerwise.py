"""Synthetic vLLM-style layers through vLLM 0.33's real reload paths, with and without derivgraph.

Layerwise (``initialize_layerwise_reload`` -> ``load_weights`` -> ``finalize_layerwise_reload``,
and ``reload_weights(is_checkpoint_format=True)``) and kernel format
(``reload_weights(is_checkpoint_format=False)``). The oracle: a census of every reachable
tensor keeps its object and address (0 moved), every tensor equals a cold start of the new
weights (0 stale), and a graph captured at startup replays bit-exactly like a cold start,
A -> B -> A with different weights.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("vllm")

from derivgraph import StrictReloadError  # noqa: E402
from derivgraph.tools.forward_capture import capture  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402
from vllm_integration.snapshot import compare, snapshot  # noqa: E402

pytestmark = pytest.mark.vllm

X = torch.randn(3, vm.H, generator=torch.Generator().manual_seed(7))
A, B = vm.checkpoint(0), vm.checkpoint(1)


def _layerwise(model, weights):  # noqa: ANN001 - the weight-transfer engines' sequence
    from vllm.model_executor.model_loader import reload

    reload.initialize_layerwise_reload(model)
    model.load_weights(weights.items())
    reload.finalize_layerwise_reload(model, vm.MODEL_CONFIG)


def _reload_checkpoint(model, weights):  # noqa: ANN001
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights.items()), None, True)


def _reload_kernel(model, weights):  # noqa: ANN001 - weights: a cold start's runtime tensors
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights), None, False)


@pytest.fixture(scope="module")
def cold():
    """Cold starts (and their replays) of A and B, built without derivgraph."""
    with vm.derivgraph_hooks(enabled=False):
        models = {"A": vm.build(A), "B": vm.build(B)}
    return {k: (m, capture(m, X.clone()).replay().clone()) for k, m in models.items()}


class _Startup:
    """A model loaded with A, a graph captured on it, and references to its startup holders."""

    def __init__(self) -> None:
        self.model = vm.build(A)
        self.graph = capture(self.model, X.clone())
        self.before = snapshot(self.model)
        moe = self.model.layers[0].moe
        self.qc = moe.quant_method.moe_quant_config
        self.experts = moe.quant_method.moe_kernel.fused_experts
        self.scale_inv = self.model.layers[0].proj._scale_inv
        self.stacked = self.model._stacked_w13_scale

    def moved(self) -> list[str]:
        plan = session.plan_for(self.model)
        declared = plan.declared().values() if plan is not None else ()
        result = compare(self.before, self.model, declared)
        return result.moved + result.undeclared

    def replay_error(self, reference: torch.Tensor) -> float:
        return float((self.graph.replay() - reference).abs().max())


def _assert_exact(s: _Startup, cold, name: str) -> None:  # noqa: ANN001
    model, out = cold[name]
    assert s.moved() == []
    assert vm.differing(s.model, model) == []
    assert s.replay_error(out) == 0.0
    # the startup holders (what a captured graph reads) hold the new values in their storage
    ref_qc = model.layers[0].moe.quant_method.moe_quant_config
    ref_experts = model.layers[0].moe.quant_method.moe_kernel.fused_experts
    assert torch.equal(s.qc._a1.alpha_or_gscale, ref_qc._a1.alpha_or_gscale)
    assert torch.equal(s.qc._w2.alpha_or_gscale, ref_qc._w2.alpha_or_gscale)
    assert torch.equal(s.experts._g1_scale_c, ref_experts._g1_scale_c)
    assert torch.equal(s.scale_inv, model.layers[0].proj._scale_inv)
    assert torch.equal(s.stacked, model._stacked_w13_scale)


# ---- without derivgraph: vLLM alone moves and stales derived tensors ----------------------------

@pytest.mark.parametrize("reload", [_layerwise, _reload_checkpoint])
def test_without_plugin_a_layerwise_reload_moves_and_stales(cold, reload):  # noqa: ANN001
    with vm.derivgraph_hooks(enabled=False):
        s = _Startup()
        reload(s.model, B)
    moved = s.moved()
    assert any(p.endswith("moe_quant_config._a1.alpha_or_gscale") for p in moved)
    assert any(p.endswith("fused_experts._g1_scale_c") for p in moved)
    assert any(p.endswith("proj.weight_t") for p in moved)
    assert any(p.endswith("attn._q_scale_inv") for p in moved)
    assert s.replay_error(cold["B"][1]) > 1e-3
    # stale: the startup holders still read A's values
    ref = cold["A"][0]
    assert torch.equal(s.experts._g1_scale_c,
                       ref.layers[0].moe.quant_method.moe_kernel.fused_experts._g1_scale_c)
    assert torch.equal(s.scale_inv, ref.layers[0].proj._scale_inv)  # non-persistent: not copied
    assert torch.equal(s.model._stacked_w13_scale, ref._stacked_w13_scale)  # model-level step


def test_without_plugin_a_kernel_format_reload_leaves_derived_tensors_stale(cold):
    with vm.derivgraph_hooks(enabled=False):
        s = _Startup()
        _reload_kernel(s.model, vm.kernel_format(cold["B"][0]))
    assert s.moved() == []  # nothing reran: nothing moved ...
    stale = vm.differing(s.model, cold["B"][0])
    assert any(p.endswith("fused_experts._g1_scale_c") for p in stale)  # ... but stale
    assert any(p.endswith("proj._scale_inv") for p in stale)
    assert s.replay_error(cold["B"][1]) > 1e-3


# ---- with derivgraph ---------------------------------------------------------------------------

@pytest.mark.parametrize("reload", [_layerwise, _reload_checkpoint])
def test_layerwise_reload_keeps_storage_and_matches_cold_start_a_b_a(cold, reload):  # noqa: ANN001
    with vm.derivgraph_hooks():
        s = _Startup()
        plan = session.plan_for(s.model)
        assert plan is not None and len(plan) == 39
        assert all(e.adopted for e in plan.entries.values())  # vLLM's tensors, adopted
        reload(s.model, B)
        _assert_exact(s, cold, "B")
        reload(s.model, A)
        _assert_exact(s, cold, "A")
        counters = session.state_for(s.model).counters
    assert counters.reloads == counters.layerwise == counters.refills == 2
    assert counters.moved_last == 0 and counters.tensors_written > 0


def test_kernel_format_reload_recomputes_what_depends_on_the_loaded_names(cold):
    with vm.derivgraph_hooks():
        s = _Startup()
        _reload_kernel(s.model, vm.kernel_format(cold["B"][0]))
        _assert_exact(s, cold, "B")
        # only layer 1's weight scale changes: only its dependents are recomputed
        w = cold["A"][0].layers[1].moe.w13_weight_scale.clone() * 3
        _reload_kernel(s.model, [("layers.1.moe.w13_weight_scale", w)])
        state = session.state_for(s.model)
        report = state.counters.last["report"]
        assert state.counters.last["loaded_names"] == 1 and report["mode"] == "recompute"
        experts1 = s.model.layers[1].moe.quant_method.moe_kernel.fused_experts
        assert torch.equal(experts1._g1_alphas, w * s.model.layers[1].moe.w13_input_scale)
        assert torch.equal(s.model._stacked_w13_scale[1], w)
        assert 0 < report["written"] < 10  # g1_alphas, _g1_alphas, _g1_scale_c, stack
        assert s.moved() == []


def test_recompute_mode_uses_the_formulas(cold):
    with vm.derivgraph_hooks(mode="recompute"):
        s = _Startup()
        _reload_checkpoint(s.model, B)
        _assert_exact(s, cold, "B")
        assert session.state_for(s.model).counters.recomputes == 1


def test_mode_off_at_runtime_passes_through(cold):
    with vm.derivgraph_hooks():
        s = _Startup()
    with vm.derivgraph_hooks(mode="off"):
        _layerwise(s.model, B)
    assert s.moved() != []
    assert session.state_for(s.model).counters.reloads == 0


def test_a_model_without_matching_specs_gets_an_empty_plan_and_no_census():
    with vm.derivgraph_hooks(specs=None):
        model = vm.build(A)
        state = session.state_for(model)
        assert state is not None and len(state.plan) == 0
        _layerwise(model, B)
        assert state.baseline is None and state.counters.tensors_written == 0


# ---- strict mode -------------------------------------------------------------------------------

def test_strict_mode_passes_when_every_derived_tensor_is_declared(cold):
    with vm.derivgraph_hooks(mode="strict"):
        s = _Startup()
        _reload_checkpoint(s.model, B)
        _assert_exact(s, cold, "B")


def test_strict_mode_fails_a_reload_that_moves_an_undeclared_tensor(monkeypatch):
    """Without the guard (tests/vllm/test_guard_plugin.py: with it, the move is undone)."""
    monkeypatch.setenv("DERIVGRAPH_GUARD", "0")
    monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)  # the planted tensor exists from the first load on
        with pytest.raises(StrictReloadError) as err:
            _reload_checkpoint(model, B)
    assert "moved: layers.0.moe.quant_method.planted_scale" in err.value.paths
    assert "moved: layers.1.moe.quant_method.planted_scale" in err.value.paths
    assert len(err.value.paths) == 2
    assert session.state_for(model).counters.strict_failures == 1


def test_strict_mode_fails_a_reload_that_adds_an_undeclared_tensor(monkeypatch):
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)  # appears on the reload
        with pytest.raises(StrictReloadError, match="undeclared derived tensor"):
            _layerwise(model, B)
    assert session.state_for(model).counters.undeclared_last == 2

