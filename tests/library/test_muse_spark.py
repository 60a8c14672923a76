"""Muse Spark: router output multiplier fold and residual alpha/beta buffers (issue 12).

The oracle: A->B->A reloads with different weights, 0 moved, bit-exact against a cold start;
folds applied once per load (3 same-weight reloads, kernel-format partial loads, a second
application refused), and canaries that show each bug without the specs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from derivgraph import Rule, SpecValidationError, compile_plan, load_spec_text, load_specs
from derivgraph.errors import FoldReappliedError
from derivgraph.examples.muse_spark import (
    FlaglessMuseSpark1xMoE,
    MuseSparkTextConfig,
    build_muse_spark,
    make_muse_weights,
    materialize_residual_path_constants,
)
from derivgraph.paths import get_path
from derivgraph.tools.forward_capture import capture

ROOT = Path(__file__).resolve().parents[2]

CFG = MuseSparkTextConfig()
SPEC = ROOT / "specs" / "vllm_muse_spark.yaml"
X = torch.randn(5, CFG.hidden_size, generator=torch.Generator().manual_seed(7))
ROUTERS = [f"model.layers.{i}.feed_forward.router.weight" for i in range(CFG.num_hidden_layers)]


@pytest.fixture(scope="module")
def weights():
    return {name: make_muse_weights(CFG, seed) for name, seed in (("A", 1), ("B", 2))}


def _specs():
    return load_specs([SPEC])


def _state(model):
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def _assert_matches_cold(model, cold):
    got, want = _state(model), _state(cold)
    assert set(got) == set(want)
    for name, tensor in want.items():
        assert torch.equal(got[name], tensor), f"{name} differs from a cold start"


def _load_kernel_format(model, weights, names=None):
    """A kernel-format reload: copy into the kept tensors, no post-load step."""
    state = _state(model)
    for name in names or weights:
        state[name].data.copy_(weights[name])


def _cold_output(weights):
    return capture(build_muse_spark(weights), X.clone()).replay().clone()


@pytest.mark.parametrize("path", ["refill", "recompute"])
def test_a_b_a_is_bit_exact_with_cold_start(weights, path):
    model = build_muse_spark(weights["A"])
    plan = compile_plan(model, _specs(), require_match=True)
    assert len(plan) == 4 * CFG.num_hidden_layers and all(e.adopted for e in plan.entries.values())
    assert sorted(plan.folds.entries) == ROUTERS
    startup = {k: (e.storage, e.startup_ptr) for k, e in plan.entries.items()}
    param_ptrs = {n: p.data_ptr() for n, p in model.named_parameters()}
    graph = capture(model, X.clone())
    cold = {name: build_muse_spark(w) for name, w in weights.items()}
    outputs = {name: _cold_output(w) for name, w in weights.items()}
    assert not torch.equal(outputs["A"], outputs["B"])

    for name in ("B", "A", "B"):
        if path == "refill":
            model.load_weights(weights[name])  # the engine's load + post-load step
            report = plan.refill(verify=True)
        else:
            _load_kernel_format(model, weights[name])
            report = plan.run(updated=list(weights[name]), verify=True)
        assert report.moved == []
        assert report.folded == ROUTERS and report.folds_skipped == []
        _assert_matches_cold(model, cold[name])
        out = graph.replay()
        assert not torch.isnan(out).any()
        assert torch.equal(out, outputs[name]), name
        for key, (obj, ptr) in startup.items():
            assert get_path(model, key) is obj and obj.data_ptr() == ptr, key
        assert {n: p.data_ptr() for n, p in model.named_parameters()} == param_ptrs


def test_canary_without_specs_reload_differs_from_cold_start(weights):
    """vLLM 0.33.0's NVIDIA fold is spent after the first load: a reload leaves the router
    weight unfolded, and the post-load step re-registers new alpha/beta buffers."""
    model = build_muse_spark(weights["A"])
    graph = capture(model, X.clone())
    old_beta = model.model.layers[0].add_attn.beta
    model.load_weights(weights["B"])
    cold = build_muse_spark(weights["B"])
    for router in ROUTERS:
        assert not torch.equal(get_path(model, router), get_path(cold, router)), router
        assert torch.equal(get_path(model, router), weights["B"][router])  # never folded
    assert model.model.layers[0].add_attn.beta is not old_beta  # a new buffer object
    assert not torch.equal(graph.replay(), _cold_output(weights["B"]))


def test_fold_is_idempotent_over_three_same_weight_reloads(weights):
    model = build_muse_spark(weights["A"])
    plan = compile_plan(model, _specs())
    cold = build_muse_spark(weights["A"])
    for _ in range(3):
        model.load_weights(weights["A"])
        report = plan.refill(verify=True)
        assert report.folded == ROUTERS and report.moved == []
        _assert_matches_cold(model, cold)
        # a second pass over the same loaded value folds nothing
        again = plan.refill(verify=True)
        assert again.folded == [] and again.folds_skipped == ROUTERS
        _assert_matches_cold(model, cold)


def test_kernel_format_partial_load_folds_only_loaded_names(weights):
    model = build_muse_spark(weights["A"])
    plan = compile_plan(model, _specs())
    cold_a, cold_b = build_muse_spark(weights["A"]), build_muse_spark(weights["B"])
    loaded = [ROUTERS[0]]
    _load_kernel_format(model, weights["B"], loaded)
    report = plan.run(updated=loaded, verify=True)
    assert report.folded == loaded and report.moved == []
    assert torch.equal(get_path(model, ROUTERS[0]), get_path(cold_b, ROUTERS[0]))
    assert torch.equal(get_path(model, ROUTERS[1]), get_path(cold_a, ROUTERS[1]))  # untouched
    # only the buffers of the loaded gate change
    gate = "model.layers.0.add_ffn.gate"
    _load_kernel_format(model, weights["B"], [gate])
    report = plan.run(updated=[gate], verify=True)
    assert report.folded == [] and report.written == 2
    assert torch.equal(model.model.layers[0].add_ffn.beta, cold_b.model.layers[0].add_ffn.beta)
    assert torch.equal(model.model.layers[0].add_attn.beta, cold_a.model.layers[0].add_attn.beta)


def test_second_application_to_the_same_loaded_value_is_refused(weights):
    model = build_muse_spark(weights["A"])
    plan = compile_plan(model, _specs())
    _load_kernel_format(model, weights["B"], [ROUTERS[0]])
    plan.run(updated=[ROUTERS[0]])
    folded = get_path(model, ROUTERS[0]).clone()
    gate_before = model.model.layers[0].add_attn.beta.clone()
    with pytest.raises(FoldReappliedError) as info:
        plan.run(updated=[ROUTERS[0], "model.layers.0.add_attn.gate"])
    assert info.value.issues[0].rule == Rule.FOLD_REAPPLIED
    assert "not loaded since" in str(info.value)
    assert torch.equal(get_path(model, ROUTERS[0]), folded)  # nothing written
    assert torch.equal(model.model.layers[0].add_attn.beta, gate_before)
    # a pass with no claim simply skips it
    assert plan.run().folds_skipped == ROUTERS


def test_an_identity_fold_is_never_refused(weights):
    cfg = MuseSparkTextConfig(output_multiplier=1.0)
    model = build_muse_spark(make_muse_weights(cfg, 1), cfg)
    plan = compile_plan(model, _specs())
    _load_kernel_format(model, make_muse_weights(cfg, 1), [ROUTERS[0]])
    report = plan.run(updated=[ROUTERS[0]])
    assert report.folded == [] and report.folds_skipped == [ROUTERS[0]]


def test_canary_a_flagless_fold_applies_twice_on_a_post_load_rerun(weights):
    """The bug class: without a guard, rerunning the post-load step folds again."""
    model = build_muse_spark(weights["A"], moe_cls=FlaglessMuseSpark1xMoE)
    cold = build_muse_spark(weights["A"], moe_cls=FlaglessMuseSpark1xMoE)
    materialize_residual_path_constants(model)  # a rerun without a load
    twice = weights["A"][ROUTERS[0]] * CFG.output_multiplier * CFG.output_multiplier
    assert torch.equal(get_path(model, ROUTERS[0]), twice)
    assert not torch.equal(get_path(model, ROUTERS[0]), get_path(cold, ROUTERS[0]))
    # and no fold spec binds to it: its engine fold is not spent (the multiplier is kept)
    assert compile_plan(model, _specs()).folds.entries == {}


def test_version_counter_misses_data_copy():
    """Why folds compare values: `.data.copy_` (vLLM's weight loaders, layerwise copy-back)
    does not bump Tensor._version on torch 2.14, so the counter cannot tell a load."""
    p = torch.nn.Parameter(torch.ones(3), requires_grad=False)
    before = p._version
    p.data.copy_(torch.zeros(3))
    assert p._version == before and torch.equal(p, torch.zeros(3))


def test_fold_follows_a_data_rebind_of_its_source(weights):
    """An engine that re-points the weight (`.data = loaded`) is folded on the new storage;
    the move itself is reported (derivgraph never re-points a source)."""
    model = build_muse_spark(weights["A"])
    plan = compile_plan(model, _specs())
    router = model.model.layers[0].feed_forward.router
    router.weight.data = weights["B"][ROUTERS[0]].clone()
    report = plan.run(updated=[ROUTERS[0]], verify=True)
    assert report.folded == [ROUTERS[0]]
    assert torch.equal(router.weight, get_path(build_muse_spark(weights["B"]), ROUTERS[0]))
    assert ROUTERS[0] in report.moved


# ---- bad fold declarations: DG errors before anything is touched --------------------------------

def _fold_spec(entry: str, where: str = "{router_output_multiplier: null}") -> str:
    return f"""
version: 1
specs:
  - name: f
    target: {{module_class: [MuseSpark1xMoE], where: {where}}}
    derived:
      - {entry}
"""


@pytest.mark.parametrize("entry, message", [
    ("{name: weight, owner: router, kind: fold, formula: 'weight * m', config: {m: nope}}",
     "exists neither on"),
    ("{name: weight, owner: router, kind: fold, formula: 'cast(weight * m, float16)', "
     "config: {m: metap_output_multiplier}}", "must keep its source's shape and dtype"),
    ("{name: nothing, owner: router, kind: fold, formula: 'nothing * 2'}",
     "is not a tensor of the model"),
    ("{name: weight, owner: router, kind: fold, formula: 'weight * m', "
     "config: {m: model.config}}", "not a number"),
])
def test_bad_fold_declarations_fail_at_compile(weights, entry, message):
    model = build_muse_spark(weights["A"])
    before = get_path(model, ROUTERS[0]).clone()
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, load_spec_text(_fold_spec(entry), "bad.yaml"))
    assert info.value.issues[0].rule == Rule.FOLD_DECLARATION
    assert message in str(info.value) and "bad.yaml:" in str(info.value)
    assert torch.equal(get_path(model, ROUTERS[0]), before)


def test_fold_formula_reading_another_tensor_fails_validation():
    from derivgraph.spec.check import check_specs as validate_specs

    specs = load_spec_text(_fold_spec(
        "{name: weight, owner: router, kind: fold, formula: 'weight * expert_bias'}"), "x.yaml")
    issues = validate_specs(specs)
    assert [i.rule for i in issues] == [Rule.FOLD_DECLARATION]
    assert "neither the folded tensor" in issues[0].message
    assert validate_specs(load_specs([SPEC])) == []


def test_config_is_only_for_folds():
    with pytest.raises(SpecValidationError, match="only for kind 'fold'"):
        load_spec_text(_fold_spec("{name: b, kind: buffer, formula: 'gate', config: {m: x}}"))


def test_two_folds_of_one_source_are_refused(weights):
    model = build_muse_spark(weights["A"])
    entry = ("{name: weight, owner: router, kind: fold, formula: 'weight * m', "
             "config: {m: metap_output_multiplier}}")
    text = _fold_spec(entry) + _fold_spec(entry).split("specs:")[1].replace("name: f", "name: g")
    with pytest.raises(SpecValidationError, match="declare one fold per source"):
        compile_plan(model, load_spec_text(text, "two.yaml"))
