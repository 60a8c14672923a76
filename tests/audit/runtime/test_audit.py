"""The runtime audit: canaries, reload oracle and ``derivgraph audit runtime``.

The canaries (``tests/fixtures/runtime_canaries.py``) hide one weight-derived tensor in each
runtime hiding place. Each must go red when its derived tensor is undeclared and reallocated
on reload, and stay green when declared and refilled; where derivgraph cannot bind into the
place, the tests say what green honestly takes. The census and the census diff are in
test_census.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from derivgraph import load_specs
from derivgraph.audit.runtime.census import fingerprint, take_census
from derivgraph.audit.runtime.oracle import audit_reload, reload_oracle
from derivgraph.cli import main
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)
from tests.fixtures import runtime_canaries as rc

ROOT = Path(__file__).resolve().parents[3]
CANARIES = ROOT / "tests" / "fixtures" / "runtime_canaries.py"
A, B = rc.make_weights(seed=0), rc.make_weights(seed=1)


@pytest.fixture(scope="module")
def canary_specs():
    return load_specs([rc.spec_path()])


def _oracle(places, mode, specs=None, **kw):
    weights_a, weights_b = rc.make_weights(places, 0), rc.make_weights(places, 1)
    return reload_oracle(lambda w: rc.build(w, places, mode), rc.reload_with, weights_a,
                         weights_b, specs=specs, **kw)


def _finding(check, category, path):
    hits = [f for f in check.diff.by(category) if path in f.paths]
    assert hits, f"no {category} finding at {path}: {check.diff.findings}"
    return hits[0]


# ---- canaries: every hiding place goes red, and green when declared -----------------------------

@pytest.mark.parametrize("place", rc.PLACES)
def test_canary_red_when_undeclared_and_reallocated(place):
    """The engine allocates the derived tensor anew on every post-load step and no spec
    declares it: the audit must report the place's path (a Python float is not reallocated,
    but a graph baked it: it is reported for recapture)."""
    report = _oracle([place], "rebuild")
    assert not report.ok()
    path = rc.canary_path(place, [place])
    category = "recapture" if place == "python_scalar" else "moved"
    finding = _finding(report.checks[0], category, path)
    assert finding.declared is False and path in report.undeclared()
    if place in ("set_alias", "data_rebind"):
        assert finding.reason.startswith("same object, new storage")
    elif place != "python_scalar":
        assert finding.reason == "replaced by another tensor at a new address"
    assert report.checks[0].diff.stale == []  # the engine recomputed every value


@pytest.mark.parametrize("place", rc.BINDABLE)
def test_canary_green_when_declared_and_refilled(place, canary_specs):
    """Same engine, now with a spec declaring the tensor at the place itself: the plan's
    refill copies the engine's new value into the startup storage and re-binds the holder
    (a module, a plain object, a frozen dataclass, a dict), so nothing moved or went stale,
    A -> B and A -> B -> A."""
    report = _oracle([place], "rebuild", canary_specs)
    assert report.ok(), report.render()
    assert report.declared >= 1 and [c.diff.changed for c in report.checks] == [0, 0]
    assert all(c.run.taken_from_engine >= 1 for c in report.checks)


@pytest.mark.parametrize("place", rc.PLACES)
def test_canary_stale_when_engine_keeps_its_startup_holders(place):
    """The engine's fix "build once, never rebuild" keeps every address but leaves the
    derived values of weights A behind after loading B: stale against a cold start of B,
    and invisible to a same-weight check (A -> B -> A is clean)."""
    report = _oracle([place], "once")
    check, back = report.checks
    path = rc.canary_path(place, [place])
    if place == "set_alias":
        path = "layers.0._fused"  # the derived tensor; the params kept their own storage
    finding = _finding(check, "stale", path)
    assert finding.declared is False and check.diff.moved == []
    assert back.diff.ok()


@pytest.mark.parametrize("place", rc.PLACES)
def test_canary_green_when_engine_keeps_holders_and_plan_recomputes(place, canary_specs):
    """Holders built once, the derived value declared (at the place, or for a list item,
    a partial argument and a closure cell at the canonical owner the engine built them
    from): the plan recomputes in place, so every holder of that one object sees the new
    value. This is the honest green for places derivgraph cannot bind into."""
    report = _oracle([place], "once", canary_specs)
    assert report.ok(), report.render()
    assert [c.diff.changed for c in report.checks] == [0, 0]
    if place in rc.UNBINDABLE:
        census = take_census(rc.build(rc.make_weights([place]), [place], "once"))
        entry = census.get(rc.canary_path(place, [place]))
        assert entry.path == "layers.0.quant_method.kernel.g1_alphas"  # one object, two paths


@pytest.mark.parametrize("place", rc.UNBINDABLE)
def test_canary_unbindable_place_stays_red_if_engine_reallocates(place, canary_specs):
    """A list item, a partial argument or a closure cell has no attribute name for a plan
    to re-bind. If the engine puts a fresh tensor there on every reload, declaring the
    canonical owner does not help: the audit keeps reporting the place, undeclared."""
    report = _oracle([place], "rebuild", canary_specs)
    finding = _finding(report.checks[0], "moved", rc.canary_path(place, [place]))
    assert finding.declared is False and not report.ok()


def test_canary_set_alias_needs_the_engine_fix(canary_specs):
    """``.set_()`` moves the checkpoint params onto the fused storage on every reload.
    Declaring ``_fused`` refills it in place but cannot move the params back: they stay
    moved (undeclared: no spec declares a checkpoint param). Green takes the declarative fix:
    params on their own storage, the fused weight declared and refilled (``once``)."""
    report = _oracle(["set_alias"], "rebuild", canary_specs)
    check = report.checks[0]
    assert sorted(check.diff.moved) == ["layers.0.indexer", "layers.0.weight"]
    assert "layers.0._fused" not in check.diff.moved  # declared and refilled
    assert all(not f.declared for f in check.diff.by("moved"))
    assert "layers.0.weight" in check.run.moved  # the plan's own check agrees
    assert _oracle(["set_alias"], "once", canary_specs).ok()


def test_canary_data_rebind_declared_is_restored(canary_specs):
    """``param.data = new`` keeps the object and swaps its storage. A plan declaring the
    param keeps a detached alias of its startup storage: the refill puts that storage back
    under the object (``restored``) and writes the new values into it, so the address a graph
    captured holds the new weights: green, with nothing moved or stale."""
    report = _oracle(["data_rebind"], "rebuild", canary_specs)
    check = report.checks[0]
    assert report.ok(), check.diff.summary()
    assert check.run.restored == ["layers.0.weight_packed"]
    assert check.run.moved == [] and check.diff.moved == [] and check.diff.stale == []


def test_canary_python_scalar_declared_needs_recapture(canary_specs):
    """No reload can refill a Python float a graph baked. Declared, the plan sets the new
    value (so it is not stale) and says ``recapture_required``; the audit lists the
    ``recapture`` finding as declared, so it does not fail."""
    report = _oracle(["python_scalar"], "rebuild", canary_specs)
    assert report.ok()
    assert report.recapture_required() == ["layers.0.input_scale_float"]
    (finding,) = report.checks[0].diff.by("recapture")
    assert finding.declared and finding.before != finding.after


# ---- the oracle ---------------------------------------------------------------------------------

def _load(model, weights):
    model.load_weights(weights)
    model.process_weights_after_loading()


def test_oracle_reference_model_red_then_green():
    cfg = RefConfig()
    wa, wb = make_weights(cfg, 3), make_weights(cfg, 4)
    red = reload_oracle(build_reference_model, _load, wa, wb)
    check = red.checks[0]
    assert (check.diff.changed, check.diff.tensors) == (17, 38)
    assert check.diff.summary().startswith("tensors changed 17/38: moved 17, stale 0")
    strides = _finding(check, "moved", "layers.1.moe.quant_method.moe_kernel.fused_experts."
                       "c_strides2")
    assert strides.path.endswith("ab_strides1") and len(strides.paths) == 2
    green = reload_oracle(build_reference_model, _load, wa, wb,
                          specs=load_specs([reference_spec_path()]))
    assert green.ok() and green.declared == 27
    data = green.as_json()
    assert data["moved"] == data["stale"] == data["undeclared"] == []
    assert data["declared"] == 27 and data["tensors"] == 38 and data["changed"] == 0
    assert [c["label"] for c in data["checks"]] == ["A->B", "A->B->A"]
    assert json.loads(json.dumps(data)) == data
    assert "PASS" in green.render() and "FAIL" in red.render()


def test_oracle_classify_without_refill_shows_what_the_plan_must_fix():
    cfg = RefConfig()
    report = reload_oracle(build_reference_model, _load, make_weights(cfg, 0),
                           make_weights(cfg, 1), specs=load_specs([reference_spec_path()]),
                           refill=False, round_trip=False)
    moved = report.checks[0].diff.by("moved")
    assert len(moved) == 17 and all(f.declared for f in moved)
    assert report.undeclared() == [] and not report.ok()
    assert report.checks[0].run is None


def test_oracle_same_weights_hide_stale_values():
    """A same-weight reload cannot see a stale derived value; different weights can."""
    same = reload_oracle(lambda w: rc.build(w, mode="once"), rc.reload_with, A, A)
    assert same.ok()
    different = reload_oracle(lambda w: rc.build(w, mode="once"), rc.reload_with, A, B)
    assert len(different.stale) == len(rc.PLACES)


def test_audit_reload_without_cold_finds_never_refreshed_holders_by_heuristic():
    report = audit_reload(rc.factory_once, rc.reload)
    assert not report.stale_checked and not report.ok()
    check = report.checks[0]
    # every tensor holder built once and never refreshed, found without a cold start ...
    expected = {rc.canary_path(p, rc.PLACES) for p in rc.PLACES
                if p not in ("set_alias", "data_rebind", "python_scalar", "list", "partial",
                             "closure")}
    expected |= {"layers.3.quant_method.kernel.g1_alphas", "layers.5.quant_method.kernel.g1_alphas",
                 "layers.6.quant_method.kernel.g1_alphas", "layers.7._fused"}
    assert set(check.diff.unrefreshed) == expected
    assert check.diff.stale == [] and check.diff.moved == []
    # ... and only those: with a cold start the exact check agrees on the tensors it shares
    exact = reload_oracle(lambda w: rc.build(w, mode="once"), rc.reload_with, A, B)
    assert set(check.diff.unrefreshed) <= set(exact.stale)
    assert exact.unrefreshed == []  # with a cold start the heuristic does not run
    text = report.render()
    assert "stale not checked" in text and "only by the unrefreshed heuristic" in text
    assert "a partial reload" in text  # says what it cannot see


def test_unrefreshed_heuristic_silent_on_fresh_and_constant_tensors(canary_specs):
    # a refilled plan keeps every holder current: nothing unrefreshed
    green = audit_reload(rc.factory_once, rc.reload, specs=canary_specs)
    assert green.unrefreshed == [], green.render()
    # a layer whose weights did not all change is not judged
    same = audit_reload(rc.factory_once, lambda m: rc.reload_with(m, A))
    assert same.unrefreshed == []


# ---- the command line ---------------------------------------------------------------------------

def _cli(capsys, *argv):
    code = main(["audit", "runtime", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _ref(name):
    return f"{CANARIES}:{name}"


def test_cli_json_red_without_specs(capsys):
    code, out, _ = _cli(capsys, "--model", _ref("factory"), "--reload", _ref("reload"),
                        "--cold", _ref("cold"), "--format", "json", "--no-plan")
    data = json.loads(out)
    assert code == 0  # findings fail only with --strict
    assert data["declared"] == 0 and data["plan"] is False and data["stale_checked"]
    expected = {rc.canary_path(p) for p in rc.PLACES if p != "python_scalar"}
    expected |= {"layers.7.indexer", "layers.7._fused"}
    assert set(data["moved"]) == expected
    assert set(data["undeclared"]) == expected | {"layers.9.input_scale_float"}
    assert data["stale"] == [] and data["recapture"] == ["layers.9.input_scale_float"]
    assert data["tensors"] == 40 and data["changed"] == 11


def test_cli_strict_exit_codes_and_green_with_specs(capsys):
    red, _, _ = _cli(capsys, "--model", _ref("factory_once"), "--reload", _ref("reload"),
                     "--cold", _ref("cold_once"), "--strict")
    assert red == 1
    code, out, _ = _cli(capsys, "--model", _ref("factory_once"), "--reload", _ref("reload"),
                        "--cold", _ref("cold_once"), "--specs", str(rc.spec_path()),
                        "--strict", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["declared"] == 11
    assert data["moved"] == data["stale"] == data["undeclared"] == []
    assert data["recapture_required"] == ["layers.9.input_scale_float"]


def test_cli_round_trip_checks_stale_without_cold(capsys):
    code, out, err = _cli(capsys, "--model", _ref("factory_once"), "--reload", _ref("toggle"),
                          "--round-trip", "--no-plan", "--strict", "--format", "json")
    data = json.loads(out)
    assert [c["label"] for c in data["checks"]] == ["A->B", "A->B->A"]
    assert data["checks"][0]["stale_checked"] is False
    assert data["checks"][1]["stale_checked"] is True
    # back on A the never-refreshed values are right again: the A->B->A leg alone passes ...
    assert data["checks"][1]["ok"] and data["checks"][1]["stale"] == []
    # ... but the first leg's heuristic saw them unchanged although their weights changed
    assert code == 1 and not data["ok"]
    assert "layers.0.g1_alphas" in data["checks"][0]["unrefreshed"]
    assert any("never refreshed" in line for line in data["blind_spots"])
    assert "not checked" not in err


def test_cli_text_ignore_and_missing_cold_note(capsys):
    code, out, err = _cli(capsys, "--model", _ref("factory"), "--reload", _ref("reload"),
                          "--no-plan", "--ignore", "layers.*", "--strict")
    assert code == 0 and "(stale not checked: no cold start)\nnote: without --cold" in out
    assert "PASS: moved 0" in out and "give --cold or --round-trip" in err


def test_cli_console_script_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "derivgraph.cli", "audit", "runtime", "--model", _ref("factory"),
         "--reload", _ref("reload"), "--cold", _ref("cold"), "--specs", str(rc.spec_path()),
         "--strict"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    assert "UNDECLARED layers.3.quant_method.kernel.consts[0]" in proc.stdout
    assert "layers.8.weight_packed" not in proc.stdout  # declared `.data` rebind: restored
    assert "FAIL: moved 5, stale 0, unrefreshed 0, gone 0, undeclared 5" in proc.stdout


@pytest.mark.gpu
def test_cuda_census_digests_and_oracle():
    """On CUDA the census batches its device digests (one sync); they must equal the
    one-tensor ``fingerprint`` and still tell red from green."""
    cfg = RefConfig()
    wa, wb = make_weights(cfg, 0), make_weights(cfg, 1)

    def factory(w):
        return build_reference_model(w, "cuda", cfg)

    def load(model, w):
        _load(model, {k: v.cuda() for k, v in w.items()})

    census = take_census(factory(wa))
    for entry in census.tensors().values():
        assert entry.fingerprint == fingerprint(entry.value)
    red = reload_oracle(factory, load, wa, wb)
    assert (red.checks[0].diff.changed, red.checks[0].diff.tensors) == (17, 38)
    green = reload_oracle(factory, load, wa, wb, specs=load_specs([reference_spec_path()]))
    assert green.ok()
    frozen = audit_reload(lambda: factory(wa), lambda m: m.load_weights(
        {k: v.cuda() for k, v in wb.items()}), cold=lambda: factory(wb))
    assert len(frozen.checks[0].diff.stale) == 10  # derived values of A left behind
