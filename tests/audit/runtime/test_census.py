"""The runtime audit's census (what it finds, how it walks, fingerprints and device digests)
and the census diff (move reasons, layout and value changes, scalars, classification against a
plan). The canaries, the reload oracle and ``derivgraph audit runtime`` are in test_audit.py.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.testing._internal.two_tensor import TwoTensor

from derivgraph import load_specs
from derivgraph.audit.runtime.census import TensorIdentity, fingerprint, take_census
from derivgraph.audit.runtime.declared import DeclaredSet, plan_path
from derivgraph.audit.runtime.diff import diff_censuses
from derivgraph.audit.runtime.fingerprint import _batched_sums, _device_digest, _device_sums
from derivgraph.planner import compile_plan
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)
from tests.fixtures import runtime_canaries as rc

A = rc.make_weights(seed=0)


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
