"""The runtime audit: census, census diff, reload oracle and ``derivgraph audit runtime``.

The canaries (``tests/fixtures/runtime_canaries.py``) hide one weight-derived tensor in each
runtime hiding place. Each must go red when its derived tensor is undeclared and reallocated
on reload, and stay green when declared and refilled; where derivgraph cannot bind into the
place, the tests say what green honestly takes.
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.testing._internal.two_tensor import TwoTensor

from derivgraph import load_specs
from derivgraph.audit.runtime.census import TensorIdentity, fingerprint, take_census
from derivgraph.audit.runtime.declared import DeclaredSet, plan_path
from derivgraph.audit.runtime.diff import diff_censuses
from derivgraph.audit.runtime.fingerprint import _batched_sums, _device_digest, _device_sums
from derivgraph.audit.runtime.oracle import audit_reload, reload_oracle
from derivgraph.cli import main
from derivgraph.planner import compile_plan
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


# ---- census -------------------------------------------------------------------------------------

def test_census_finds_every_hiding_place_with_identity_and_fingerprint():
    model = rc.build(A)
    census = take_census(model)
    index = census.index()
    for place in rc.PLACES:
        assert rc.canary_path(place) in index, place
    layer = model.layers
    expected = {
        "layers.3.quant_method.kernel.consts[0]": layer[3].quant_method.kernel.consts[0],
        "layers.4.quant_method.kernel.consts['g1_alphas']":
            layer[4].quant_method.kernel.consts["g1_alphas"],
        "layers.5.quant_method.kernel.apply_fn.partial.args[0]":
            layer[5].quant_method.kernel.apply_fn.args[0],
        "layers.6.quant_method.kernel.apply_fn.closure.alpha":
            layer[6].quant_method.kernel.apply_fn.__closure__[0].cell_contents,
        "layers.2.quant_method.quant_config.w1.alpha": layer[2].quant_method.quant_config.w1.alpha,
    }
    for path, tensor in expected.items():
        entry = census.get(path)
        assert entry.value is tensor
        ident = entry.identity
        assert ident == TensorIdentity(id(tensor), tensor.data_ptr(), tensor.storage_offset(),
                                       tuple(tensor.shape), tuple(tensor.stride()), "float32",
                                       "cpu", tensor.untyped_storage().data_ptr(),
                                       tensor.untyped_storage().nbytes())
        assert entry.fingerprint == fingerprint(tensor)
    assert census.get("layers.3.quant_method.kernel.consts[0]").place == "item"
    assert census.get("layers.5.quant_method.kernel.apply_fn.partial.args[0]").place == "partial"
    assert census.get("layers.6.quant_method.kernel.apply_fn.closure.alpha").place == "closure"
    scalar = census.get("layers.9.input_scale_float")
    assert scalar.kind == "scalar" and scalar.value == float(layer[9].input_scale)
    # the descriptor's `scale` is the registered parameter: one entry, alias path recorded
    scale = census.get("layers.2.weight_scale")
    assert "layers.2.quant_method.quant_config.w1.scale" in scale.aliases
    # `.set_()` puts two parameters and the fused tensor in one storage, at their offsets
    w, idx, fused = (census.get(f"layers.7.{n}").identity for n in ("weight", "indexer", "_fused"))
    assert w.storage_ptr == idx.storage_ptr == fused.storage_ptr
    assert (w.storage_offset, idx.storage_offset) == (0, 32)


@dataclass(frozen=True)
class _Frozen:
    t: torch.Tensor


class _Slots:
    __slots__ = ("t", "unset")

    def __init__(self, t: torch.Tensor):
        self.t = t


class _Kernel:
    def run(self, x):
        return x


_DEFAULT_SCALE, _DEFAULT_BIAS = torch.full((2,), 3.0), torch.zeros(1)


def test_census_walks_keywords_defaults_methods_slots_wrappers_and_keys():
    m = nn.Module()
    shared = torch.ones(3)
    kernel = _Kernel()
    kernel.scratch = torch.zeros(2)  # reachable only through a bound method's __self__

    def with_default(x, scale=_DEFAULT_SCALE, *, bias=_DEFAULT_BIAS):
        return x * scale + bias

    m.fn = functools.partial(max, 1, key=shared)
    m.defaults = with_default
    m.bound = kernel.run
    m.slots = _Slots(torch.ones(4))
    m.frozen = _Frozen(shared)
    m.wrapped = TwoTensor(torch.ones(2), torch.zeros(2))
    m.by_key = {("fp8", 4): torch.ones(1), torch.float16: torch.ones(1), 7: [shared, 2.5]}
    m.weight = nn.Parameter(torch.ones(2), requires_grad=False)
    m.weight.weight_loader = functools.partial(max, torch.full((1,), 9.0))
    m.on_meta = torch.empty(5, device="meta")
    census = take_census(m)
    paths = set(census.index())
    for p in ("fn.partial.keywords['key']", "frozen.t", "by_key[7][0]", "defaults.defaults[0]",
              "defaults.kwdefaults['bias']", "bound.__self__.scratch", "slots.t", "wrapped.a",
              "wrapped.b", "by_key[('fp8', 4)]", "by_key[torch.float16]",
              "weight.weight_loader.partial.args[0]", "on_meta"):
        assert p in paths, p
    assert census.get("by_key[7][1]").value == 2.5
    assert census.get("frozen.t") is census.get("by_key[7][0]")  # one tensor, one entry
    assert census.get("wrapped").identity.data_ptr == 0  # a wrapper subclass has no storage
    assert census.get("wrapped").fingerprint is None
    meta = census.get("on_meta")
    assert meta.identity.data_ptr == 0 and meta.fingerprint is None


def test_census_cycles_shared_objects_and_back_references():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    shared = type("Cfg", (), {})()
    shared.table = torch.arange(3)
    for i, layer in enumerate(model):
        layer.quant_method = type("QM", (), {})()
        layer.quant_method.layer = layer  # a back-reference
        layer.quant_method.cfg = shared
        layer.quant_method.me = layer.quant_method  # a self-cycle
        layer.quant_method.weight_view = layer.weight
        layer.index = i
    census = take_census(model)
    table = census.get("0.quant_method.cfg.table")
    assert table.path == "0.quant_method.cfg.table"
    assert table.aliases == ["1.quant_method.cfg.table"]
    w0 = census.get("0.weight")
    assert w0.aliases == ["0.quant_method.weight_view"]  # no `0.quant_method.layer.weight`
    assert not [p for p in census.index() if ".layer." in p or ".me." in p]


def test_census_bounds_depth_and_object_count():
    class Node:
        pass

    root = nn.Module()
    node = root.chain = Node()
    for _ in range(20):
        node.next = Node()
        node.t = torch.ones(1)
        node = node.next
    deep = take_census(root, max_depth=5)
    assert len(deep.tensors()) == 4 and deep.depth_limited == 1
    full = take_census(root, max_depth=30)
    assert len(full.tensors()) == 20 and full.depth_limited == 0
    truncated = take_census(root, max_objects=3)
    assert truncated.truncated and len(truncated.tensors()) < 20


def test_census_reads_only():
    model = rc.build(A)

    def state():
        tensors = [*model.named_parameters(), *model.named_buffers()]
        return {n: (id(t), t.data_ptr(), fingerprint(t)) for n, t in tensors}

    before = state()
    attrs = {id(layer): dict(layer.__dict__) for layer in model.layers}
    take_census(model)
    take_census(model, fingerprints=False, floats=False, ints=True, keep_values=False)
    assert state() == before
    assert {id(layer): dict(layer.__dict__) for layer in model.layers} == attrs


def test_fingerprint_exact_on_values_dtype_and_layout():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert fingerprint(t) == fingerprint(t.clone())
    assert fingerprint(t.t()) == fingerprint(t.t().contiguous())  # values, not strides
    bumped = t.clone()
    bumped[2, 3] = torch.nextafter(bumped[2, 3], torch.tensor(100.0))
    assert fingerprint(bumped) != fingerprint(t)
    assert fingerprint(t.to(torch.float64)) != fingerprint(t)
    assert fingerprint(t.reshape(4, 3)) != fingerprint(t)
    assert fingerprint(torch.empty(0)) == "float32[0]:"
    fp8 = torch.ones(4).to(torch.float8_e4m3fn)
    assert fingerprint(fp8) == fingerprint(fp8.clone())


def test_device_digest_is_exact_integer_sums():
    raw = torch.randint(0, 256, (1000,), dtype=torch.uint8)
    digest = _device_digest(raw, chunk=64)
    assert digest == _device_digest(raw.clone(), chunk=1000)  # chunking does not matter
    total = int(raw.to(torch.int64).sum())
    assert digest.split(".")[0] == f"{total:x}"
    swapped = raw.clone()
    swapped[[3, 500]] = raw[[500, 3]]
    if raw[3] != raw[500]:
        assert _device_digest(swapped, chunk=64) != digest  # position-weighted
    one_off = raw.clone()
    one_off[999] ^= 1
    assert _device_digest(one_off, chunk=64) != digest
    parts = [raw[:10], raw[10:11], raw[11:700], raw[700:]]
    batched = _batched_sums(parts)  # many small tensors in a few kernels: the same sums
    assert batched.tolist() == [_device_sums(p).tolist() for p in parts]


# ---- diff ---------------------------------------------------------------------------------------

def _holder() -> nn.Module:
    m = nn.Module()
    m.weight = nn.Parameter(torch.arange(6.0).reshape(2, 3), requires_grad=False)
    m.other = nn.Parameter(torch.ones(4), requires_grad=False)
    m.cache = torch.zeros(3)
    m.scale_float = 0.5
    return m


def test_diff_move_reasons_gone_new_and_scalars():
    m = _holder()
    before = take_census(m)
    cold = take_census(_holder())
    old_cache = m.cache
    with torch.no_grad():
        m.cache = torch.zeros(3)  # re-bound: a new tensor at the path
        m.weight.data = m.weight.data.clone()  # `.data` rebind: same object, new storage
        fused = torch.cat([torch.ones(4), torch.ones(2)])
        m.other.set_(fused.untyped_storage(), 0, (4,), (1,))  # `.set_()` onto a fused storage
    m.fused = fused
    m.scale_float = 0.75
    m.extra = torch.ones(1)
    after = take_census(m)
    diff = diff_censuses(before, after, cold)
    moved = {f.path: f for f in diff.by("moved")}
    assert set(moved) == {"cache", "weight", "other"}
    assert moved["cache"].reason.startswith("replaced by another tensor at a new address")
    assert moved["weight"].reason.startswith("same object, new storage")
    assert "now shares storage with fused" in moved["other"].reason
    assert moved["cache"].before == TensorIdentity.of(old_cache).describe()
    assert diff.new == ["extra", "fused"]
    stale = {f.path: f for f in diff.by("stale")}
    assert set(stale) == {"scale_float"}  # tensors kept their values
    assert stale["scale_float"].after == "0.75"
    assert diff.recapture == []  # a stale float is reported once, as stale
    assert diff.tensors == 3 and diff.changed == 3 and not diff.ok()
    assert set(diff.undeclared()) == {"cache", "weight", "other", "scale_float"}

    del m.cache
    m.scale_float = 0.5
    gone = diff_censuses(before, take_census(m), None)
    assert gone.gone == ["cache"] and not gone.stale_checked


def test_diff_layout_change_and_value_change():
    m = _holder()
    before = take_census(m)
    cold = take_census(_holder())
    with torch.no_grad():
        m.weight.as_strided_((3, 2), (1, 3))  # same storage, new layout
        m.other.mul_(2.0)  # same place, new value
    diff = diff_censuses(before, take_census(m), cold)
    (moved,) = diff.by("moved")
    assert moved.path == "weight" and moved.reason.startswith("same object and storage, new layout")
    stale = {f.path: f for f in diff.by("stale")}
    assert "differs from a cold start: float32[3, 2] vs float32[2, 3]" in stale["weight"].reason
    assert stale["other"].reason.endswith("(max |diff| 1)")


def test_diff_scalar_recapture_nan_and_ignore():
    m = _holder()
    m.nan_float = math.nan
    before = take_census(m)
    m.scale_float = 0.25
    m.workspace = None
    after = take_census(m)
    diff = diff_censuses(before, after, after)
    assert diff.recapture == ["scale_float"] and diff.stale == []  # NaN equals NaN
    assert "baked the old number" in diff.by("recapture")[0].reason
    with torch.no_grad():
        m.cache = torch.zeros(3)
    ignored = diff_censuses(before, take_census(m), None, ignore=["cache", "scale_*"])
    assert ignored.findings == []


def test_diff_classifies_against_plan_including_alias_paths():
    model = build_reference_model(make_weights(RefConfig(), 0))
    plan = compile_plan(model, load_specs([reference_spec_path()]))
    declared = DeclaredSet.from_plan(plan)
    assert len(declared) == len(plan.declared()) == 27
    alias = "layers.0.moe.quant_method.moe_kernel.fused_experts.c_strides2"
    assert alias in declared.paths
    assert declared.covers([alias]) and declared.covers(["x"], [plan.declared()[alias]])
    assert not declared.covers(["layers.0.moe.w13_weight"], [model.layers[0].moe.w13_weight])
    assert plan_path("a.consts[0]['k'].b") == "a.consts.0.k.b"


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
