"""Kimi-K3 specialized decode packed MoE front: the pack_front hook, the spec, vLLM conformance.

vLLM 0.33.0 packs ``[router rows of this rank, zero-padded to 16; this rank's latent down
shard]`` once per MoE layer (``runtime/providers.py::pack_front``) and keeps it only in
holders no spec can name. The hook (``vllm_integration/kimi_k3_front.py``) keeps the same
tensor on the MoE module; ``vllm-kimi-k3-packed-moe-front`` adopts it. Here: A -> B -> A in-place
reloads through the plan (0 moved, every vLLM-style holder keeps the address, bit-exact with a
cold start, idempotent), the runtime audit's canary (stale without the plan, fresh with it),
vLLM's own ``pack_front`` through the installed hooks, and the hook rows' drift checks.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest
import torch

from derivgraph import AdoptionError, compile_plan, load_spec_file
from derivgraph.audit.runtime.reload_watch import watch
from derivgraph.examples.reference_kimi_k3_moe_front import (
    MOE_LAYERS,
    KimiLinearForCausalLM,
    build_kimi_k3_moe_front,
    load_in_place,
    make_kimi_k3_moe_front_weights,
    pack_front,
)
from vllm_integration import drift, hooks
from vllm_integration.config import MODE_ENV
from vllm_integration.hook_table import TABLE, HookKind
from vllm_integration.kimi_k3_front import (
    PACKED_FRONT,
    PACKED_FRONT_RANK,
    PACKED_FRONT_TP,
    wrap_build_specialized_decode,
    wrap_pack_front,
)

ROOT = Path(__file__).resolve().parents[2]
SPECS = [s for f in sorted((ROOT / "specs").glob("*.yaml")) for s in load_spec_file(f)]
SPEC_NAME = "vllm-kimi-k3-packed-moe-front"
WITHOUT_IT = [s for s in SPECS if s.name != SPEC_NAME]
FRONT_KEYS = [f"model.layers.{i}.block_sparse_moe.{PACKED_FRONT}" for i in MOE_LAYERS]
DENSE_KEY = "specialized_decode.feed_forward.0.down.weight"
VLLM_ROOT = drift.source_root("vllm")
needs_vllm = pytest.mark.skipif(VLLM_ROOT is None, reason="vLLM is not installed")
_DECODE = "vllm.models.kimi_k3.nvidia.specialized_decode.runtime"


@functools.cache
def _weights(seed: int, tp: int) -> dict[str, torch.Tensor]:
    return make_kimi_k3_moe_front_weights(seed, tp)


@functools.cache
def _cold_fronts(seed: int, tp: int, rank: int) -> tuple[torch.Tensor, ...]:
    """A cold start's packed fronts (vLLM's code path: no hook, no plan)."""
    model = build_kimi_k3_moe_front(_weights(seed, tp), tp, rank)
    return tuple(model.specialized_decode.prefetch.tables["oproj_down", i, 3].weights[0]
                 for i in MOE_LAYERS)


def _holders(model: KimiLinearForCausalLM, layer: int) -> list[tuple[str, int]]:
    """Every vLLM-style holder of one layer's packed front: (what, address it reads)."""
    decode = model.specialized_decode
    assert decode is not None
    out = [("SharedFront.packed", decode.feed_forward[layer].front.packed.address)]
    for key, ranges in decode.prefetch.tables.items():
        if key[1] == layer:
            out.append((f"tables{key}.weights[0]", ranges.weights[0].data_ptr()))
            out.append((f"tables{key}.table", int(ranges.table[0, 0])))
    return out


# ---- the spec on the reference module (torch only) ----------------------------------------------

@pytest.mark.parametrize(("tp", "rank"), [(8, 3), (16, 15)], ids=["tp8-rank3", "tp16-rank15"])
def test_a_b_a_in_place_reload_keeps_every_holder_and_matches_a_cold_start(tp: int,
                                                                            rank: int) -> None:
    model = build_kimi_k3_moe_front(_weights(1, tp), tp, rank, wrap_pack_front(pack_front))
    plan = compile_plan(model, SPECS)
    assert sorted(plan.entries) == sorted(FRONT_KEYS + ([DENSE_KEY] if tp == 16 else []))
    startup = {k: (plan.entries[k].storage, plan.entries[k].storage.data_ptr())
               for k in FRONT_KEYS}
    rows = (896 // tp + 15) // 16 * 16 + 3584 // tp
    for key, layer in zip(FRONT_KEYS, MOE_LAYERS):
        obj, ptr = startup[key]
        assert obj.shape == (rows, 7168) and obj.dtype == torch.bfloat16
        # adopted: vLLM's own tensor, shared by every holder
        assert obj is model.specialized_decode.prefetch.tables["oproj_down", layer, 3].weights[0]
        assert all(addr == ptr for _, addr in _holders(model, layer))
    assert any(not torch.equal(a, b) for a, b in zip(_cold_fronts(1, tp, rank),
                                                     _cold_fronts(2, tp, rank)))
    for seed in (2, 1, 2):
        load_in_place(model, _weights(seed, tp))
        report = plan.run(verify=True)
        assert report.moved == []
        for key, layer, cold in zip(FRONT_KEYS, MOE_LAYERS, _cold_fronts(seed, tp, rank)):
            obj, ptr = startup[key]
            moe = model.model.layers[layer].block_sparse_moe
            assert getattr(moe, PACKED_FRONT) is obj and obj.data_ptr() == ptr
            assert all(addr == ptr for _, addr in _holders(model, layer)), _holders(model, layer)
            assert torch.equal(obj, cold), (key, seed)
            if tp == 16:  # 56 router rows, 8 zero rows, then the down shard
                assert not obj[56:64].any() and obj[56:64].shape == (8, 7168)
    plan.run(verify=True)  # idempotent: a second pass writes the same values
    for key, cold in zip(FRONT_KEYS, _cold_fronts(2, tp, rank)):
        assert torch.equal(startup[key][0], cold), key


def test_adoption_refuses_a_packed_front_that_differs_from_the_formula() -> None:
    model = build_kimi_k3_moe_front(_weights(1, 8), 8, 3, wrap_pack_front(pack_front))
    moe = model.model.layers[MOE_LAYERS[0]].block_sparse_moe
    getattr(moe, PACKED_FRONT)[500, 7] += 1  # a planted bug in one latent down row
    with pytest.raises(AdoptionError, match="DG011"):
        compile_plan(model, SPECS)


def test_without_the_hook_the_spec_matches_nothing() -> None:
    model = build_kimi_k3_moe_front(_weights(1, 8), 8, 3)  # vLLM as is: no owner path
    assert not hasattr(model.model.layers[1].block_sparse_moe, PACKED_FRONT)
    assert sorted(compile_plan(model, SPECS).entries) == []


def _unrefreshed(model: KimiLinearForCausalLM, tp: int, plan=None) -> list[str]:
    record = watch(model)
    load_in_place(model, _weights(2, tp))
    if plan is not None:
        assert plan.run(verify=True).moved == []
    return sorted(u.path for u in record.check(model).unrefreshed)


@pytest.mark.parametrize("hooked", [False, True], ids=["vllm-as-is", "hooked"])
def test_runtime_audit_flags_the_packed_front_stale_without_the_spec(hooked: bool) -> None:
    pack = wrap_pack_front(pack_front) if hooked else pack_front
    model = build_kimi_k3_moe_front(_weights(1, 8), 8, 3, pack)
    compile_plan(model, WITHOUT_IT)  # the rest of the library: nothing else is stale
    # one finding per tensor object, at its canonical path: the MoE module's attribute once the
    # hook keeps it there, else the first prefetch table holding it (its holder: the whole model)
    expected = FRONT_KEYS if hooked else [
        f"specialized_decode.prefetch.tables[('oproj_down', {i}, 3)].weights[0]"
        for i in MOE_LAYERS]
    assert _unrefreshed(model, 8) == expected


@pytest.mark.parametrize("tp", [8, 16])
def test_runtime_audit_finds_nothing_stale_with_the_spec(tp: int) -> None:
    model = build_kimi_k3_moe_front(_weights(1, tp), tp, 1, wrap_pack_front(pack_front))
    plan = compile_plan(model, SPECS)
    assert _unrefreshed(model, tp, plan) == []


# ---- the hook itself ----------------------------------------------------------------------------

def test_the_wrapper_returns_vllms_object_and_keeps_it_with_rank_and_tp(monkeypatch) -> None:
    model = KimiLinearForCausalLM(16)
    load_in_place(model, _weights(1, 16))
    moe = model.model.layers[1].block_sparse_moe
    calls = []

    def engine_pack(m, rank, tp):
        calls.append((rank, tp))
        return pack_front(m, rank, tp)

    hooked = wrap_pack_front(engine_pack)
    out = hooked(moe, 5, 16)
    assert calls == [(5, 16)]
    assert getattr(moe, PACKED_FRONT) is out
    assert (getattr(moe, PACKED_FRONT_RANK), getattr(moe, PACKED_FRONT_TP)) == (5, 16)
    # a plain attribute: vLLM's registered tensors are unchanged
    assert PACKED_FRONT not in dict(moe.named_buffers()) and PACKED_FRONT not in moe.state_dict()
    other = model.model.layers[2].block_sparse_moe
    monkeypatch.setenv(MODE_ENV, "off")
    other_out = hooked(other, 5, 16)
    assert other_out.shape == out.shape and not torch.equal(other_out, out)
    assert not hasattr(other, PACKED_FRONT)  # mode off: vLLM exactly as is


def test_building_the_specialized_decode_recompiles_the_holders_plan() -> None:
    """vLLM compiles the plan at the post-load step, then its model state builds the decode."""
    from torch import nn

    from vllm_integration import session

    root = nn.Module()  # like KimiK3ForConditionalGeneration holding the language model
    root.language_model = lm = KimiLinearForCausalLM(16)
    load_in_place(lm, _weights(1, 16))
    session.attach(root)  # the post-load step: no specialized decode yet, nothing to declare
    try:
        assert len(session.plan_for(root)) == 0
        build = wrap_build_specialized_decode(KimiLinearForCausalLM.build_specialized_decode)
        build(lm, 16, 15, wrap_pack_front(pack_front))  # what KimiK3ModelState.__init__ runs
        plan = session.plan_for(root)
        keys = [f"language_model.{k}" for k in [*FRONT_KEYS, DENSE_KEY]]
        assert sorted(plan.entries) == sorted(keys)
        startup = {k: (plan.entries[k].storage, plan.entries[k].storage.data_ptr()) for k in keys}
        session.begin(root, "load-weights")  # an in-place reload the hooks report
        load_in_place(lm, _weights(2, 16))
        report = session.end(root)
        assert report is not None and report.moved == []
        for key, cold in zip(keys, _cold_fronts(2, 16, 15)):  # the two fronts
            obj, ptr = startup[key]
            assert plan.entries[key].storage is obj and obj.data_ptr() == ptr
            assert torch.equal(obj, cold), key
    finally:
        session.detach(root)


_BAD_SPEC = """version: 1
specs:
  - name: test-broken-kimi-front
    target:
      module_class: [KimiMoE]
      where: {derivgraph_packed_front_tp: [8, 16]}
    derived:
      - {name: broken, kind: attribute, formula: "gate.missing * 2"}
"""


@pytest.mark.parametrize("mode", ["refill", "strict"])
def test_a_spec_problem_at_the_replan_keeps_the_load_plan_and_fails_only_in_strict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        mode: str) -> None:
    from torch import nn

    from derivgraph import SpecValidationError
    from vllm_integration import session
    from vllm_integration.config import SPECS_ENV

    (tmp_path / "broken.yaml").write_text(_BAD_SPEC)
    monkeypatch.setenv(SPECS_ENV, str(tmp_path / "broken.yaml"))
    monkeypatch.setenv(MODE_ENV, mode)
    root = nn.Module()
    root.language_model = lm = KimiLinearForCausalLM(8)
    load_in_place(lm, _weights(1, 8))
    at_load = session.attach(root)  # matches nothing yet: the broken spec needs the decode
    build = wrap_build_specialized_decode(KimiLinearForCausalLM.build_specialized_decode)
    try:
        if mode == "strict":
            with pytest.raises(SpecValidationError, match="DG007"):
                build(lm, 8, 3, wrap_pack_front(pack_front))
        else:
            build(lm, 8, 3, wrap_pack_front(pack_front))
            assert "not kept across reloads" in caplog.text and "DG007" in caplog.text
        assert session.plan_for(root) is at_load  # the plan compiled at load stays
    finally:
        session.detach(root)


@pytest.mark.vllm
@needs_vllm
def test_installed_hooks_wrap_vllms_pack_front_and_the_spec_matches_it(fresh_hooks) -> None:
    """vLLM's own pack_front, through the binding build_providers calls (runtime.decode)."""
    from vllm.models.kimi_k3.nvidia.specialized_decode.runtime import decode, providers

    original = providers.pack_front
    assert not getattr(original, "__derivgraph_wrapper__", False)
    assert hooks.install()
    hooked = decode.pack_front
    assert hooked is providers.pack_front and getattr(hooked, "__derivgraph_wrapper__", False)
    assert hooked.__wrapped__ is original
    for tp, rank in ((16, 5), (8, 7)):
        model = build_kimi_k3_moe_front(_weights(1, tp), tp, rank, decode.pack_front)
        plan = compile_plan(model, SPECS)  # adoption: the spec's values equal vLLM's
        for key, layer in zip(FRONT_KEYS, MOE_LAYERS):
            moe = model.model.layers[layer].block_sparse_moe
            held = model.specialized_decode.prefetch.tables["oproj_down", layer, 4].weights[0]
            assert plan.entries[key].storage is held is getattr(moe, PACKED_FRONT)
            assert torch.equal(held, original(moe, rank, tp))
        load_in_place(model, _weights(2, tp))  # an in-place reload of gate / down weights
        assert plan.run(verify=True).moved == []
        for key, layer in zip(FRONT_KEYS, MOE_LAYERS):
            moe = model.model.layers[layer].block_sparse_moe
            assert torch.equal(plan.entries[key].storage, original(moe, rank, tp)), (tp, key)
    hooks.uninstall()
    assert decode.pack_front is original and providers.pack_front is original


# ---- drift: the hook rows against vLLM's source -------------------------------------------------

ROWS = tuple(r for r in TABLE if r.function in ("pack_front", "build_specialized_decode"))
MODEL = "models/kimi_k3/nvidia/model.py"


def test_the_hook_rows_name_pack_front_its_decode_binding_and_the_build() -> None:
    assert [(r.module, r.attribute, r.kind, r.signature) for r in ROWS] == [
        (f"{_DECODE}.providers", "pack_front", HookKind.FUNCTION, ("moe", "rank", "tp")),
        (f"{_DECODE}.decode", "pack_front", HookKind.BINDING, ("moe", "rank", "tp")),
        ("vllm.models.kimi_k3.nvidia.model", "KimiLinearForCausalLM.build_specialized_decode",
         HookKind.METHOD, ("self",))]
    assert hooks.WRAPPERS["pack_front"] is wrap_pack_front
    assert hooks.WRAPPERS[ROWS[2].attribute] is wrap_build_specialized_decode


@pytest.fixture
def fake_kimi(tmp_path: Path) -> Path:
    assert VLLM_ROOT is not None
    dest = tmp_path / "vllm"
    for row in ROWS:
        src = drift._module_file(VLLM_ROOT, row.module)
        assert src is not None, row.module
        rel = src.relative_to(VLLM_ROOT)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest / rel)
    return dest


@pytest.mark.vllm
@needs_vllm
def test_the_hook_rows_match_the_installed_vllm(fake_kimi: Path) -> None:
    assert drift.check_rows(ROWS) == []
    assert drift.check_rows(ROWS, root=fake_kimi) == []
    assert drift.missing_bindings(ROWS, root=fake_kimi) == []


@pytest.mark.vllm
@needs_vllm
def test_a_planted_signature_change_goes_red(fake_kimi: Path) -> None:
    path = fake_kimi / "models/kimi_k3/nvidia/specialized_decode/runtime/providers.py"
    text = path.read_text()
    assert "def pack_front(moe, rank, tp):" in text
    path.write_text(text.replace("def pack_front(moe, rank, tp):",
                                 "def pack_front(moe, rank, tp, rows=896):"))
    issues = drift.check_rows(ROWS, root=fake_kimi)
    assert [(i.target, i.key) for i in issues] == [
        (f"{_DECODE}.providers.pack_front", f"{_DECODE}.providers:pack_front")]
    assert "rows" in issues[0].problem


@pytest.mark.vllm
@needs_vllm
def test_a_planted_import_change_goes_red(fake_kimi: Path) -> None:
    path = fake_kimi / "models/kimi_k3/nvidia/specialized_decode/runtime/decode.py"
    text = path.read_text()
    line = "from .providers import BATCHES, PREPARED_MAX, Attention, pack_front\n"
    assert line in text
    path.write_text(text.replace(line, "from .providers import BATCHES, PREPARED_MAX, "
                                       "Attention\nfrom . import providers\n"))
    issues = drift.check_rows(ROWS, root=fake_kimi)
    assert [i.target for i in issues] == [f"{_DECODE}.decode.pack_front"]
    assert drift.DriftReport("0.33.0", issues).disabled_keys() == frozenset()


@pytest.mark.vllm
@needs_vllm
def test_a_planted_rename_of_the_build_goes_red(fake_kimi: Path) -> None:
    path = fake_kimi / MODEL
    text = path.read_text()
    assert text.count("def build_specialized_decode(self) -> None:") == 1
    path.write_text(text.replace("def build_specialized_decode(self) -> None:",
                                 "def build_decode(self) -> None:"))
    issues = drift.check_rows(ROWS, root=fake_kimi)
    key = "vllm.models.kimi_k3.nvidia.model:KimiLinearForCausalLM.build_specialized_decode"
    assert [i.key for i in issues] == [key] and "not defined" in issues[0].problem
