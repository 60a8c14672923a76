"""The spec-value check (DG055): declared tensors against a fresh evaluation of their specs.

Canaries: a declared tensor overwritten after the reload pass, and an engine post-load step
that computes a declared tensor otherwise than its spec (a refill keeps the engine's value):
both found and named with their spec. False-positive guards: a clean reload, engine-computed
tensors (not recomputable: listed, never judged), a scalar, a fold and constants.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from derivgraph import builtin_specs, compile_plan, load_spec_text, load_specs
from derivgraph.audit.runtime.oracle import audit_reload
from derivgraph.audit.runtime.spec_values import NotRecomputed, verify_spec_values
from derivgraph.cli import main
from derivgraph.examples.cutlass_w4a8 import build_w4a8_model, make_w4a8_weights
from derivgraph.paths import get_path
from tests.fixtures import runtime_canaries as rc

CANARIES = Path(rc.__file__)
THIS = Path(__file__)


@pytest.fixture(scope="module")
def canary_specs():
    return load_specs([rc.spec_path()])


def _reloaded(specs):  # noqa: ANN001, ANN202
    model = rc.factory()
    plan = compile_plan(model, specs)
    rc.reload(model)
    plan.refill(verify=True)
    return model, plan


def test_clean_reload_has_no_finding_and_lists_the_scalar(canary_specs):
    model, plan = _reloaded(canary_specs)
    check = verify_spec_values(plan)
    assert check.ok() and check.mismatches == []
    scalars = [k for k, e in plan.entries.items() if e.node.kind == "scalar"]
    assert scalars and all(check.not_recomputed[k] == NotRecomputed.SCALAR.value
                           for k in scalars)
    assert check.checked == len(plan.entries) - len(scalars)


def test_overwritten_after_the_pass_is_named_with_its_spec(canary_specs):
    model, plan = _reloaded(canary_specs)
    key = "layers.0.g1_alphas"
    before = get_path(model, key).clone()
    with torch.no_grad():
        get_path(model, key)[1] += 0.5  # a hook writing into the declared tensor afterwards
    check = verify_spec_values(plan)
    assert [m.path for m in check.mismatches] == [key]
    bad = check.mismatches[0]
    assert bad.spec == "canary-module-attribute" and bad.worst == pytest.approx(0.5)
    assert "DG055 spec-value" in bad.reason() and "runtime_canaries.yaml:" in bad.reason()
    assert torch.equal(get_path(model, key)[0], before[0])  # the check wrote nothing back


def test_tolerance_is_the_specs():
    text = """
version: 1
specs:
  - name: tolerant
    target: {module_class: CanaryLayer, where: {place: module_attribute}}
    derived:
      - {name: g1_alphas, kind: attribute, formula: weight_scale * input_scale,
         tolerance: 0.01}
"""
    model, plan = _reloaded(load_spec_text(text, "tolerant.yaml"))
    with torch.no_grad():
        get_path(model, "layers.0.g1_alphas")[0] += 0.004
    assert verify_spec_values(plan).ok()
    with torch.no_grad():
        get_path(model, "layers.0.g1_alphas")[0] += 0.02
    assert [m.path for m in verify_spec_values(plan).mismatches] == ["layers.0.g1_alphas"]


def _w4a8_specs():
    names = {"vllm-cutlass-w4a8-strides", "vllm-cutlass-w4a8-b-strides"}
    return [s for s in builtin_specs() if s.name in names]


def test_engine_tensors_are_not_recomputed_and_constants_are_checked():
    model = build_w4a8_model(seed=0)
    plan = compile_plan(model, _w4a8_specs())
    model.load_weights(make_w4a8_weights(model, 1))
    model.process_weights_after_loading()
    plan.refill(verify=True)
    check = verify_spec_values(plan)
    engine = sorted(k for k, e in plan.entries.items() if e.node.kind == "engine")
    assert engine and check.ok()
    assert {k: check.not_recomputed[k] for k in engine} == {
        k: NotRecomputed.ENGINE.value for k in engine}
    constants = [k for k in plan.constant_entries if plan.entries[k].node.kind != "engine"]
    assert constants and check.checked >= len(constants)
    with torch.no_grad():
        get_path(model, engine[0]).add_(7)  # an engine tensor: cannot be judged, stays silent
    assert verify_spec_values(plan).ok()
    with torch.no_grad():
        get_path(model, constants[0]).add_(1)  # a constant overwritten: found
    found = {m.path for m in verify_spec_values(plan).mismatches}
    aliases = {k for k, e in plan.entries.items() if e.node.kind == "alias"
               and get_path(model, k) is get_path(model, constants[0])}
    assert found == {constants[0], *aliases}  # and every declared alias of the same object


def test_fold_compared_with_what_it_wrote():
    model = rc.once_fold_factory()
    plan = compile_plan(model, load_spec_text(rc.fold_spec_text(), "fold.yaml"))
    rc.once_fold_reload(model)
    plan.run(verify=True)
    check = verify_spec_values(plan)
    assert check.ok() and check.checked == 1  # the fold source, as the fold left it
    with torch.no_grad():
        model.router.weight.mul_(2.5)  # folded a second time by someone else
    bad = verify_spec_values(plan).mismatches
    assert [(m.path, m.fold, m.spec) for m in bad] == [
        ("router.weight", True, "fold-canary-router-multiplier")]
    assert "the value its fold wrote at the last pass" in bad[0].reason()


def wrong_engine_reload(model: rc.CanaryModel) -> None:
    """A reload whose post-load step computes the declared ``g1_alphas`` twice too large."""
    rc.reload(model)
    layer = model.layers[rc.PLACES.index("module_attribute")]
    layer.g1_alphas = layer.g1_alphas * 2  # a new object: the refill keeps the engine's value


def test_oracle_and_cli_report_a_spec_value_difference(canary_specs, capsys):  # noqa: ANN001
    report = audit_reload(rc.factory, wrong_engine_reload, specs=canary_specs,
                          verify_specs=True)
    assert report.spec_mismatches() == ["layers.0.g1_alphas"] and not report.ok()
    clean = audit_reload(rc.factory, rc.reload, specs=canary_specs, verify_specs=True)
    assert clean.spec_mismatches() == [] and clean.checks[0].specs.checked > 0
    args = ["audit", "runtime", "--model", f"{CANARIES}:factory", "--specs",
            str(rc.spec_path()), "--strict", "--ignore", "*"]
    assert main([*args, "--reload", f"{THIS}:wrong_engine_reload"]) == 1
    out = capsys.readouterr().out
    assert "SPEC-VALUE DG055 spec-value: layers.0.g1_alphas (spec 'canary-module-attribute'" \
        in out and "spec values 1" in out
    assert main([*args, "--reload", f"{THIS}:wrong_engine_reload", "--no-verify-specs"]) == 0
    capsys.readouterr()
    assert main([*args, "--reload", f"{CANARIES}:reload", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["spec_mismatches"] == [] and data["checks"][0]["spec_values"]["checked"] > 0


def test_comparison_any_dtype_nan_and_signed_zero():
    from derivgraph.audit.runtime.spec_values import _worst

    fp8 = torch.randn(4, 3).to(torch.float8_e4m3fn)  # torch.equal has no fp8 kernel on CPU
    assert _worst(fp8, fp8.clone()) == 0.0
    assert _worst(fp8, (fp8.float() * 2).to(torch.float8_e4m3fn)) > 0
    nan = torch.tensor([float("nan"), 0.0])
    assert _worst(nan, torch.tensor([float("nan"), -0.0])) == 0.0  # as adoption compares
    assert _worst(nan, torch.tensor([1.0, 0.0])) == float("inf")  # NaN against a number
    assert _worst(torch.ones(3), torch.ones(3, dtype=torch.float64)) == float("inf")
