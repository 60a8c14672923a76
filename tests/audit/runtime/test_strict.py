"""vLLM strict mode catches stale-in-place tensors and changed Python scalars (real reload path).

The synthetic layers of ``tests/fixtures/vllm_models.py`` are reloaded through vLLM 0.33's real
``reload_weights`` / layerwise path with the plugin's hooks. A planted undeclared
non-persistent buffer derived from a weight is kept in place and never refilled by vLLM (stale
in place): strict mode must raise and name it. A planted Python float derived from a weight
changes on reload: a WARNING on the ``vllm`` logger, a strict failure, allowed with
``DERIVGRAPH_ALLOW_RECAPTURE=1``. Also the freshness heuristic's units and its false-alarm
guards.
"""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

from derivgraph.audit.runtime.freshness import (
    SAMPLE_BLOCK,
    holder_module,
    module_changes,
    sampled_digest,
    skip_reason,
)
from derivgraph.audit.runtime.reload_watch import watch

# ---- the heuristic, without vLLM ----------------------------------------------------------------


class _Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4), requires_grad=False)
        self.scale = nn.Parameter(torch.rand(4) + 0.5, requires_grad=False)
        self.register_buffer("inv", self.scale.reciprocal(), persistent=False)
        self.register_buffer("fill", torch.full((4,), 3.0), persistent=False)
        self.strides = torch.full((4,), 7, dtype=torch.int64)
        self.t = self.weight.t()  # a view of the weight: follows it


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(_Layer() for _ in range(2))
        self.rotary = nn.Module()
        self.rotary.register_buffer("cache", torch.randn(8), persistent=False)  # no weights


def _load_new(model: _Model, refresh: bool) -> None:
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.copy_(torch.randn(4, 4))
            layer.scale.copy_(torch.rand(4) + 0.5)
            if refresh:
                layer.inv.copy_(layer.scale.reciprocal())


def test_watch_flags_a_buffer_not_refreshed_when_every_weight_changed():
    model = _Model()
    record = watch(model)
    _load_new(model, refresh=False)
    result = record.check(model)
    assert [u.path for u in result.unrefreshed] == ["layers.0.inv", "layers.1.inv"]
    assert result.unrefreshed[0].module == "layers.0" and result.unrefreshed[0].loaded == 2
    assert "stale in place" in result.unrefreshed[0].reason()
    assert result.moved == [] and result.undeclared == []


def test_watch_silent_when_refreshed_or_only_some_weights_changed():
    model = _Model()
    record = watch(model)
    _load_new(model, refresh=True)
    assert record.check(model).unrefreshed == []  # refreshed: fresh
    model = _Model()
    record = watch(model)
    with torch.no_grad():
        model.layers[0].weight.mul_(2)  # the scale (its source) did not change
    assert record.check(model).unrefreshed == []


def test_watch_reports_changed_python_floats():
    model = _Model()
    model.layers[0].scale_float = 0.5
    record = watch(model)
    model.layers[0].scale_float = 0.75
    changes = record.check(model).scalars
    assert [(c.path, c.before, c.after) for c in changes] == [("layers.0.scale_float", 0.5, 0.75)]


def test_freshness_helpers():
    modules = {"", "layers", "layers.0", "layers.0.proj"}
    assert holder_module("layers.0.proj.quant_method.kernel.alpha", modules) == "layers.0.proj"
    assert holder_module("layers.0.x[0]", modules) == "layers.0"
    assert holder_module("stacked", modules) == ""
    changes = module_changes({"a.w": "1", "a.s": "2", "b.w": "3"},
                             {"a.w": "9", "a.s": "8", "b.w": "3"})
    assert changes["a"] == (2, 2) and changes["b"] == (1, 0) and changes[""] == (3, 2)
    assert skip_reason(torch.full((3,), 2.0)) == "constant fill"
    assert skip_reason(torch.arange(3)) is not None
    assert skip_reason(torch.tensor([0.5])) is None  # one element: a real derived scalar
    big = torch.randn(1 << 16)  # 256 kB: every 16th block of SAMPLE_BLOCK bytes is read
    width = SAMPLE_BLOCK // big.element_size()
    before = sampled_digest(big)
    big[width] += 1  # the second block: not in the sample; sampling only misses, never invents
    assert sampled_digest(big) == before
    big[width - 1] += 1  # the first block is read
    first = sampled_digest(big)
    assert first != before
    big[16 * width + 3] += 1  # and every 16th block after it
    assert sampled_digest(big) != first


# ---- vLLM's real reload path with the plugin ---------------------------------------------

vllm = pytest.importorskip("vllm")

from derivgraph import StrictReloadError  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402

A, B = vm.checkpoint(0), vm.checkpoint(1)


def _reload_checkpoint(model, weights):  # noqa: ANN001 - vLLM's reload_weights, layerwise
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights.items()), None, True)


def _layerwise(model, weights):  # noqa: ANN001 - the weight-transfer engines' sequence
    from vllm.model_executor.model_loader import reload

    reload.initialize_layerwise_reload(model)
    model.load_weights(weights.items())
    reload.finalize_layerwise_reload(model, vm.MODEL_CONFIG)


def _planting(extra):  # noqa: ANN001, ANN202
    original = vm.SynScaledLinearMethod.process_weights_after_loading

    def process_weights_after_loading(self, layer):  # noqa: ANN001, ANN202
        original(self, layer)
        extra(layer)

    return process_weights_after_loading


def _plant_buffer(layer: nn.Module) -> None:
    # undeclared, derived from a weight, non-persistent: vLLM keeps it and never refills it
    layer.register_buffer("_planted_inv", 2.0 / layer.weight_scale, persistent=False)


def _plant_float(layer: nn.Module) -> None:
    layer.weight_scale_float = float(layer.weight_scale)


@pytest.mark.vllm
@pytest.mark.parametrize("reload", [_reload_checkpoint, _layerwise])
def test_strict_mode_names_an_undeclared_nonpersistent_buffer_left_stale(monkeypatch, reload):  # noqa: ANN001
    monkeypatch.setattr(vm.SynScaledLinearMethod, "process_weights_after_loading",
                        _planting(_plant_buffer))
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        startup = model.layers[0].proj._planted_inv
        with pytest.raises(StrictReloadError) as err:
            reload(model, B)
    stale = [p for p in err.value.paths if p.startswith("stale in place: ")]
    assert [p.split(" (")[0] for p in stale] == [
        "stale in place: layers.0.proj._planted_inv", "stale in place: layers.1.proj._planted_inv"]
    assert "layers.0.proj" in stale[0]
    assert not [p for p in err.value.paths if not p.startswith("stale in place: ")]
    # the finding is true: kept in place, still A's value although B's weight_scale differs
    assert model.layers[0].proj._planted_inv is startup
    assert torch.equal(startup, 2.0 / A["layers.0.proj.weight_scale"])
    assert not torch.equal(startup, 2.0 / B["layers.0.proj.weight_scale"])
    assert session.state_for(model).counters.unrefreshed_last == 2


@pytest.mark.vllm
def test_strict_mode_passes_the_same_model_without_the_plant():
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        _reload_checkpoint(model, B)  # every derived tensor declared and refilled
        counters = session.state_for(model).counters
        assert counters.unrefreshed_last == 0 and counters.spec_mismatches_last == 0
        assert counters.last["spec_values"]["checked"] > 10  # the spec check ran, found nothing


def _overwrite_after_the_pass(monkeypatch, model) -> None:  # noqa: ANN001
    """Code writing into a declared tensor after derivgraph's reload pass (a late hook, a
    kernel using it as scratch). vLLM's own post-load output for ``_scale_inv`` cannot do it:
    layerwise reload drops a non-persistent buffer built on its temporary layer and the pass
    recomputes it; so the write is made right after the pass, before the strict check."""
    from derivgraph.runtime.plan import Plan

    def after(original):  # noqa: ANN001, ANN202
        def run(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            report = original(self, *args, **kwargs)
            with torch.no_grad():
                for layer in model.layers:
                    layer.proj._scale_inv.mul_(2)
            return report
        return run

    monkeypatch.setattr(Plan, "run", after(Plan.run))


@pytest.mark.vllm
@pytest.mark.parametrize("reload", [_reload_checkpoint, _layerwise])
def test_strict_mode_names_a_declared_tensor_differing_from_its_spec(monkeypatch, reload):  # noqa: ANN001
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        _overwrite_after_the_pass(monkeypatch, model)
        with pytest.raises(StrictReloadError) as err:
            reload(model, B)
    assert [p.split(" (")[0] for p in err.value.paths] == [
        "spec value differs: layers.0.proj._scale_inv",
        "spec value differs: layers.1.proj._scale_inv"]
    assert "spec 'syn-scaled-linear'" in err.value.paths[0]
    assert "DG055 spec-value" in err.value.paths[0]
    assert "2 declared tensor(s) differing from their spec" in str(err.value)
    # the finding is true: the live value is twice what the spec computes from B
    live = model.layers[0].proj._scale_inv
    assert torch.equal(live, 2 * B["layers.0.proj.weight_scale"].reciprocal())


@pytest.mark.vllm
def test_spec_value_difference_is_a_vllm_warning_outside_strict_mode(monkeypatch, vllm_log):  # noqa: ANN001
    monkeypatch.setenv(session.VERIFY_SPECS_ENV, "1")
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(A)
        _overwrite_after_the_pass(monkeypatch, model)
        _reload_checkpoint(model, B)  # no raise outside strict mode
    assert session.state_for(model).counters.spec_mismatches_last == 2
    warnings = [r for r in vllm_log.records if r.levelno == logging.WARNING
                and "differ from what their spec computes" in r.getMessage()]
    assert len(warnings) == 1 and "layers.0.proj._scale_inv" in warnings[0].getMessage()
    monkeypatch.setenv(session.VERIFY_SPECS_ENV, "0")
    assert not session.verify_specs_enabled("strict") and not session.verify_specs_enabled("refill")
    monkeypatch.delenv(session.VERIFY_SPECS_ENV)
    assert session.verify_specs_enabled("strict") and not session.verify_specs_enabled("refill")


@pytest.fixture()
def vllm_log(caplog):  # noqa: ANN001, ANN201 - caplog attached to the "vllm" logger itself
    logger = logging.getLogger("vllm")
    attach = not logger.propagate  # vLLM's own logging config stops propagation at "vllm"
    if attach:
        logger.addHandler(caplog.handler)
    caplog.handler.setLevel(logging.WARNING)
    yield caplog
    if attach:
        logger.removeHandler(caplog.handler)


@pytest.mark.vllm
def test_changed_scalar_is_a_vllm_warning_and_fails_strict_mode(monkeypatch, vllm_log):  # noqa: ANN001
    monkeypatch.setattr(vm.SynScaledLinearMethod, "process_weights_after_loading",
                        _planting(_plant_float))
    monkeypatch.delenv(session.ALLOW_RECAPTURE_ENV, raising=False)
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        with pytest.raises(StrictReloadError) as err:
            _reload_checkpoint(model, B)
    assert [p.split(" (")[0] for p in err.value.paths] == [
        "scalar changed: layers.0.proj.weight_scale_float",
        "scalar changed: layers.1.proj.weight_scale_float"]
    old = float(A["layers.0.proj.weight_scale"])
    assert f"({old!r} -> " in err.value.paths[0]
    warnings = [r for r in vllm_log.records if r.levelno == logging.WARNING
                and r.name.startswith("vllm") and "Python scalar" in r.getMessage()]
    assert len(warnings) == 1 and "layers.0.proj.weight_scale_float" in warnings[0].getMessage()
    assert session.ALLOW_RECAPTURE_ENV in warnings[0].getMessage()


@pytest.mark.vllm
def test_changed_scalar_allowed_with_the_env_var_still_warns(monkeypatch, vllm_log):  # noqa: ANN001
    monkeypatch.setattr(vm.SynScaledLinearMethod, "process_weights_after_loading",
                        _planting(_plant_float))
    monkeypatch.setenv(session.ALLOW_RECAPTURE_ENV, "1")
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        _reload_checkpoint(model, B)  # passes: the deployment recaptures
    counters = session.state_for(model).counters
    assert counters.scalars_changed_last == 2 and counters.strict_failures == 0
    assert any(r.levelno == logging.WARNING and "Python scalar" in r.getMessage()
               for r in vllm_log.records)
