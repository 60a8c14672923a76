"""The built-in drafter specs, proven against vLLM 0.33.0's own code on CPU: the fused K/V
stacks every drafter's ``load_weights`` builds (bare instances of the real model classes), and
Gemma4 MTP's full lm-head weight (vLLM's own ``_get_full_lm_head_weight``, TP = 1)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from derivgraph import compile_plan  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402
from tests.fixtures.vllm_attention_layers import _Linear  # noqa: E402
from tests.fixtures.vllm_drafters import DRAFTERS, Drafter  # noqa: E402
from tests.fixtures.vllm_moe_checkpoints import _gen  # noqa: E402
from tests.fixtures.vllm_spec_checks import _same, snapshot  # noqa: E402

SPECS = builtin_specs()



# ---- drafters: fused K/V stacks built by load_weights --------------------------------------------

@pytest.mark.parametrize("name", sorted(DRAFTERS))
def test_drafter_fused_kv_specs(name: str) -> None:
    model_cls, num_layers, bias, spec_names, expected = DRAFTERS[name]
    drafter = Drafter(model_cls, num_layers, bias)
    drafter.load_weights(0)
    keys = sorted(f"model.{k}" for k in expected)
    plan = compile_plan(drafter, SPECS)
    assert sorted(plan.entries) == keys
    assert {e.node.bound.spec.name for e in plan.entries.values()} == spec_names
    for rel, fn in expected.items():
        entry = plan.entries[f"model.{rel}"]
        if entry.node.kind == "alias":  # `.data` of the Parameter: same storage, new object
            assert entry.storage is drafter.model.hidden_norm.weight
        else:
            assert entry.adopted, rel
        assert _same(getattr(drafter.model, rel), fn(drafter.model)), rel
    startup = {k: e.storage for k, e in plan.entries.items()}
    ptrs = {k: t.data_ptr() for k, t in startup.items()}
    a_values = snapshot(drafter, keys)

    drafter.load_weights(1)  # the drafter reload: new fused tensors
    assert any(get_path(drafter, k) is not startup[k] for k in keys)
    b_values = snapshot(drafter, keys)
    report = plan.refill(verify=True)
    assert report.moved == []
    cold_b = Drafter(model_cls, num_layers, bias)
    cold_b.load_weights(1)
    for key in keys:
        assert get_path(drafter, key) is startup[key] and startup[key].data_ptr() == ptrs[key]
        assert _same(startup[key], b_values[key]), key
        assert _same(startup[key], get_path(cold_b, key)), key
    for rel, fn in expected.items():
        assert _same(getattr(drafter.model, rel), fn(drafter.model)), rel
    if "_fused_kv_weight" in expected:  # layer order is numeric: layers.2 before layers.10
        rows = drafter.model.layers[10].self_attn.qkv_proj.weight[32:]
        assert torch.equal(drafter.model._fused_kv_weight[-rows.shape[0]:], rows)

    drafter.load_weights(0)  # A -> B -> A
    plan.refill(verify=True)
    for key in keys:
        assert get_path(drafter, key) is startup[key]
        assert _same(startup[key], a_values[key]), key


# ---- Gemma4 MTP: vLLM's own _get_full_lm_head_weight (TP = 1 here) -----------------------------

def test_gemma4_mtp_full_lm_head_matches_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm.model_executor.models.gemma4_mtp as mtp_mod

    monkeypatch.setattr(mtp_mod, "get_tensor_model_parallel_world_size", lambda: 1)
    model = mtp_mod.Gemma4MTP.__new__(mtp_mod.Gemma4MTP)
    nn.Module.__init__(model)
    model.lm_head = _Linear(64, 16)
    embedder = mtp_mod.Gemma4MTPMaskedEmbedder.__new__(mtp_mod.Gemma4MTPMaskedEmbedder)
    nn.Module.__init__(embedder)
    embedder.vocab_size = 60
    model.masked_embedding = embedder
    model._stable_full_lm_head_weight = None
    with torch.no_grad():
        model.lm_head.weight.copy_(torch.randn(64, 16, generator=_gen(1)))
    vllm_value = model._get_full_lm_head_weight().clone()  # TP = 1: an uncached view
    assert model._stable_full_lm_head_weight is None
    plan = compile_plan(model, SPECS)
    cache = plan.entries["_stable_full_lm_head_weight"].storage
    assert torch.equal(cache, vllm_value)
    assert model._get_full_lm_head_weight() is cache  # vLLM now reads the bound cache
    with torch.no_grad():
        model.lm_head.weight.copy_(torch.randn(64, 16, generator=_gen(2)))
    model._stable_full_lm_head_weight = None  # what vLLM's load_weights does
    assert plan.refill(verify=True).moved == []
    assert model._get_full_lm_head_weight() is cache
    assert torch.equal(cache, model.lm_head.weight[:60])
