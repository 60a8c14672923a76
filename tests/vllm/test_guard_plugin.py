"""The plugin's default safety net, through vLLM's real reload code on CPU: the guard keeps what
no spec declares, one bad spec never disables the rest, and what cannot be kept is reported."""

from __future__ import annotations

import logging
import shutil

import pytest
import torch

pytest.importorskip("vllm")

from derivgraph.errors import DerivgraphError, RecaptureRequired, Rule  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402

pytestmark = pytest.mark.vllm

A, B = vm.checkpoint(0), vm.checkpoint(1)
PLANT = "layers.{i}.moe.quant_method.planted_scale"


def _reload(model, weights):  # noqa: ANN001 - reload_weights, checkpoint format (layerwise)
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights.items()), None, True)


def _plant(model, i=0):  # noqa: ANN001
    return model.layers[i].moe.quant_method.planted_scale


@pytest.mark.parametrize("mode", ["refill", "strict"])
def test_guard_restores_an_undeclared_rebuilt_tensor(monkeypatch, mode):
    monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)
    with vm.derivgraph_hooks(mode=mode):
        model = vm.build(A)
        state = session.state_for(model)
        assert PLANT.format(i=0) in state.guard.guarded()
        startup = _plant(model)
        ptr = startup.data_ptr()
        _reload(model, B)  # strict: passes, because nothing is left moved
    now = _plant(model)
    assert now is startup and now.data_ptr() == ptr
    torch.testing.assert_close(now, model.layers[0].moe.w2_weight_scale * 2.0, rtol=0, atol=0)
    assert not torch.equal(now, vm.build(A).layers[0].moe.quant_method.planted_scale)
    assert state.counters.guard_restored_last >= vm.LAYERS
    assert state.counters.last["guard"]["recapture"] == []


def test_canary_without_the_guard_the_rebuilt_tensor_moves(monkeypatch):
    monkeypatch.setenv("DERIVGRAPH_GUARD", "0")
    monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(A)
        startup = _plant(model)
        _reload(model, B)
    assert session.state_for(model).guard is None
    assert _plant(model) is not startup


def test_without_any_spec_the_guard_alone_keeps_the_experts_constants(tmp_path):
    empty = tmp_path / "none"
    empty.mkdir()
    with vm.derivgraph_hooks(mode="refill", specs=empty):
        model = vm.build(A)
        state = session.state_for(model)
        assert len(state.plan) == 0
        experts = "layers.0.moe.quant_method.moe_kernel.fused_experts"
        assert f"{experts}.ab_strides1" in state.guard.guarded()
        qm = model.layers[0].moe.quant_method
        strides, gscale = qm.moe_kernel.fused_experts.ab_strides1, qm.moe_quant_config._a1
        gscale_t = gscale.alpha_or_gscale
        _reload(model, B)
    qm = model.layers[0].moe.quant_method
    assert qm.moe_kernel.fused_experts.ab_strides1 is strides
    assert qm.moe_quant_config._a1.alpha_or_gscale is gscale_t
    torch.testing.assert_close(gscale_t, 1.0 / model.layers[0].moe.w13_input_scale)


BAD = """
version: 1
specs:
  - name: syn-bad-planted
    target: {module_class: SynMoE, quant_method_class: SynFp8MoEMethod}
    derived:
      - {name: planted_scale, owner: quant_method, kind: attribute,
         formula: "w2_weight_scale * 3.0"}
"""


def _mixed(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    shutil.copy(vm.SPEC_PATH, folder / "good.yaml")
    (folder / "bad.yaml").write_text(BAD)
    return folder


def test_mixed_good_and_bad_specs_keep_the_good_plan(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)
    with vm.derivgraph_hooks(mode="refill", specs=_mixed(tmp_path)):
        with caplog.at_level(logging.ERROR, logger="vllm"):
            model = vm.build(A)
        state = session.state_for(model)
        assert [d.spec for d in state.dropped] == ["syn-bad-planted"]
        assert state.dropped[0].rule is Rule.ADOPTION
        assert "syn-bad-planted" in caplog.text and "SynMoE" in caplog.text
        assert "DG011" in caplog.text
        specs = {e.node.bound.spec.name for e in state.plan.entries.values()}
        assert {"syn-fp8-moe-quant-config", "syn-experts-constants"} <= specs
        assert PLANT.format(i=0) in state.guard.guarded()  # the dropped spec's tensor
        declared = state.plan.declared()
        strides = declared["layers.0.moe.quant_method.moe_kernel.fused_experts.ab_strides1"]
        startup = _plant(model)
        _reload(model, B)
    experts = model.layers[0].moe.quant_method.moe_kernel.fused_experts
    assert experts.ab_strides1 is strides  # the good plan kept its tensor
    assert _plant(model) is startup  # the guard kept the bad spec's tensor


def test_strict_refuses_a_bad_spec(monkeypatch, tmp_path):
    monkeypatch.setattr(vm.SynFp8MoEMethod, "plant", True)
    with vm.derivgraph_hooks(mode="strict", specs=_mixed(tmp_path)):
        with pytest.raises(DerivgraphError):
            vm.build(A)


def _growing(monkeypatch):
    """A post-load step whose undeclared tensor changes shape on every run."""
    calls = {"n": 0}
    original = vm.SynFp8MoEMethod.process_weights_after_loading

    def post_load(self, layer):  # noqa: ANN001
        original(self, layer)
        calls["n"] += 1
        self.scratch = torch.zeros(calls["n"])

    monkeypatch.setattr(vm.SynFp8MoEMethod, "process_weights_after_loading", post_load)


def test_a_resized_slot_is_reported_recapture_required(monkeypatch, caplog):
    _growing(monkeypatch)
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(A)
        with caplog.at_level(logging.WARNING, logger="vllm"):
            _reload(model, B)
    assert "graph recapture required" in caplog.text
    assert "layers.0.moe.quant_method.scratch" in caplog.text
    assert session.state_for(model).counters.guard_recapture_last == vm.LAYERS


def test_strict_raises_naming_each_resized_slot(monkeypatch):
    _growing(monkeypatch)
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        with pytest.raises(RecaptureRequired) as err:
            _reload(model, B)
    assert sorted(s.split(":")[0] for s in err.value.slots) == [
        f"layers.{i}.moe.quant_method.scratch" for i in range(vm.LAYERS)]


def _roots_after_a_reload() -> list[tuple[str, ...]]:
    """The chains the guard's watch finds as new objects after a plugin reload."""
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(A)
        assert "load_weights" in model.__dict__  # the plugin's live loader
        _reload(model, B)
        survey = session.state_for(model).guard.watch.survey()
    return [chain for chain, _ in survey.roots]


def test_the_plugins_own_load_weights_is_not_a_new_object_to_the_guard():
    """The live loader goes in before the guard's snapshot: no reload walks it as new."""
    assert (".load_weights",) not in _roots_after_a_reload()


def test_canary_a_loader_installed_after_the_snapshot_is_walked_on_every_reload(monkeypatch):
    on_post_load = session.on_post_load
    monkeypatch.setattr(session, "on_post_load",  # the order before: snapshot, then loader
                        lambda model, prepare=None: on_post_load(model))
    assert (".load_weights",) in _roots_after_a_reload()  # red: a new root every reload
