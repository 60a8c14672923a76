"""New library specs on their reference modules (torch only): A -> B -> A, 0 moved, bit-exact
with a cold start, idempotent, and a canary that shows each site breaks without the plan.

Collective sites on 2 ranks are in tests/ops/test_collectives.py; vLLM's own code in
tests/vllm/specs/test_specs_*.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from derivgraph import AdoptionError, compile_plan, load_spec_file
from derivgraph.examples.reference_dsv4_compressor import build_dsv4_model, make_dsv4_weights
from derivgraph.examples.reference_gemma4_mtp import build_gemma4_mtp, make_gemma4_mtp_weights
from derivgraph.examples.reference_mla import MLAConfig, build_mla_model, make_mla_weights
from derivgraph.paths import get_path

ROOT = Path(__file__).resolve().parents[2]
SPECS = [s for f in sorted((ROOT / "specs").glob("*.yaml")) for s in load_spec_file(f)]


def _tensors(model: nn.Module, keys: list[str]) -> dict[str, torch.Tensor]:
    from derivgraph.paths import get_path
    return {k: get_path(model, k).detach().clone() for k in keys}


def _a_b_a(build: Callable[[int], nn.Module], reload: Callable[[nn.Module, int], None],
           expected_keys: list[str], engine_post_load: Callable[[nn.Module], None] | None,
           ) -> None:
    """Compile on A; reload B, A; each time 0 moved, startup storage kept, equal to cold."""
    model = build(1)
    plan = compile_plan(model, SPECS)
    assert sorted(plan.entries) == sorted(expected_keys)
    startup = {k: (e.storage, e.storage.data_ptr()) for k, e in plan.entries.items()}
    cold = {s: _tensors(build(s), expected_keys) for s in (1, 2)}
    assert any(not torch.equal(cold[1][k], cold[2][k]) for k in expected_keys)
    for seed in (2, 1, 2):
        reload(model, seed)
        if engine_post_load is not None:
            engine_post_load(model)
            report = plan.refill(verify=True)
        else:
            report = plan.run(verify=True)
        assert report.moved == []
        for key, (obj, ptr) in startup.items():
            assert plan.entries[key].storage is obj and obj.data_ptr() == ptr, key
        warm = _tensors(model, expected_keys)
        for key in expected_keys:
            assert torch.equal(warm[key], cold[seed][key]), (key, seed)
    plan.run(verify=True)  # idempotent: a second pass writes the same values
    again = _tensors(model, expected_keys)
    for key in expected_keys:
        assert torch.equal(again[key], cold[2][key]), key


# ---- MLA W_UV / W_UK_T -----------------------------------------------------------------------

MLA_KEYS = [f"layers.{i}.self_attn.mla_attn.{n}" for i in (0, 1) for n in ("W_UV", "W_UK_T")]


@pytest.mark.parametrize("fp8", [False, True], ids=["bf16", "fp8-block"])
@pytest.mark.parametrize("mode", ["refill", "recompute"])
def test_mla_absorbed_weights_a_b_a(fp8: bool, mode: str) -> None:
    cfg = MLAConfig(fp8=fp8)
    _a_b_a(lambda s: build_mla_model(make_mla_weights(cfg, s), cfg),
           lambda m, s: m.load_weights(make_mla_weights(cfg, s)), MLA_KEYS,
           (lambda m: m.process_weights_after_loading()) if mode == "refill" else None)


def test_mla_fp8_in_place_reload_is_stale_without_the_plan() -> None:
    """Canary: an in-place reload skips the post-load step; W_UV keeps A's dequantized values."""
    cfg = MLAConfig(fp8=True)
    model = build_mla_model(make_mla_weights(cfg, 1), cfg)
    model.load_weights(make_mla_weights(cfg, 2))
    cold_b = build_mla_model(make_mla_weights(cfg, 2), cfg)
    attn, ref = model.layers[0].self_attn.mla_attn, cold_b.layers[0].self_attn.mla_attn
    assert not torch.equal(attn.W_UV, ref.W_UV)


def test_mla_fp8_spec_dequantizes_with_the_block_scales() -> None:
    """The FP8 formula must use the scales: a plan over a layer whose W_UV ignores them fails."""
    cfg = MLAConfig(fp8=True)
    model = build_mla_model(make_mla_weights(cfg, 1), cfg)
    attn = model.layers[0].self_attn.mla_attn
    with torch.no_grad():
        attn.W_UV.copy_(attn.W_UV * 2)
    with pytest.raises(AdoptionError, match="W_UV"):
        compile_plan(model, SPECS)


def test_mla_unquantized_weights_stay_views_of_kv_b_proj() -> None:
    """vLLM's unquantized W_UV / W_UK_T share kv_b_proj's storage; adoption keeps that."""
    cfg = MLAConfig()
    model = build_mla_model(make_mla_weights(cfg, 1), cfg)
    attn = model.layers[0].self_attn.mla_attn
    base = attn.kv_b_proj.weight.untyped_storage().data_ptr()
    compile_plan(model, SPECS)
    for name in ("W_UV", "W_UK_T"):
        assert isinstance(getattr(attn, name), nn.Parameter)
        assert getattr(attn, name).untyped_storage().data_ptr() == base


# ---- DeepSeek-V4 ROCm fused compressor ---------------------------------------------------------

DSV4_KEYS = [f"layers.{i}.attn._fused_compressor_weight" for i in (0, 1)]


@pytest.mark.parametrize("mode", ["refill", "recompute"])
def test_dsv4_fused_compressor_a_b_a(mode: str) -> None:
    _a_b_a(lambda s: build_dsv4_model(make_dsv4_weights(s)),
           lambda m, s: m.load_weights(make_dsv4_weights(s)), DSV4_KEYS,
           (lambda m: m.process_weights_after_loading()) if mode == "refill" else None)


def test_dsv4_safe_layout_keeps_checkpoint_storage_and_costs_one_copy() -> None:
    model = build_dsv4_model(make_dsv4_weights(1))
    plan = compile_plan(model, SPECS)
    attn = model.layers[0].attn
    main = attn.compressor.fused_wkv_wgate.weight
    indexer = attn.indexer.compressor.fused_wkv_wgate.weight
    fused = attn._fused_compressor_weight
    storages = {t.untyped_storage().data_ptr() for t in (main, indexer, fused)}
    assert len(storages) == 3  # nothing shares: the fused buffer is one extra copy
    assert fused.nbytes == main.nbytes + indexer.nbytes
    assert "_fused_compressor_weight" in attn._non_persistent_buffers_set
    assert plan.entries["layers.0.attn._fused_compressor_weight"].node.kind == "buffer"


def test_vllm_set_layout_moves_the_indexer_parameter() -> None:
    """Canary for vLLM 0.33.0's `.set_()`: the indexer Parameter now lives at offset main*K of
    the fused storage, and a second post-load step returns early (its fused weight goes stale
    the moment either Parameter is rebound)."""
    model = build_dsv4_model(make_dsv4_weights(1), safe=False)
    attn = model.layers[0].attn
    indexer = attn.indexer.compressor.fused_wkv_wgate.weight
    main = attn.compressor.fused_wkv_wgate.weight
    assert indexer.untyped_storage().data_ptr() == attn._fused_compressor_weight.untyped_storage(
        ).data_ptr()
    assert indexer.storage_offset() == main.numel()
    fused = attn._fused_compressor_weight
    with torch.no_grad():
        attn.indexer.compressor.fused_wkv_wgate.weight.data = make_dsv4_weights(2)[
            "layers.0.attn.indexer.compressor.fused_wkv_wgate.weight"].clone()
    assert attn.prepare_compressor_gemm_fusion() is False  # early return
    assert attn._fused_compressor_weight is fused
    assert not torch.equal(fused[main.shape[0]:], attn.indexer.compressor.fused_wkv_wgate.weight)


# ---- Gemma4 MTP gathered lm_head (TP = 1 here; 2 ranks in tests/ops/test_collectives.py) ----

def test_gemma4_mtp_lm_head_cache_a_b_a_alone() -> None:
    model = build_gemma4_mtp(make_gemma4_mtp_weights(1))
    assert model._stable_full_lm_head_weight is None  # TP = 1: vLLM caches nothing
    plan = compile_plan(model, SPECS)
    cache = model._stable_full_lm_head_weight
    assert cache is plan.entries["_stable_full_lm_head_weight"].storage
    ptr = cache.data_ptr()
    for seed in (2, 1):
        model.load_weights(make_gemma4_mtp_weights(seed))
        assert model._stable_full_lm_head_weight is None
        assert plan.refill(verify=True).moved == []
        assert model._stable_full_lm_head_weight is cache and cache.data_ptr() == ptr
        cold = build_gemma4_mtp(make_gemma4_mtp_weights(seed))
        x = torch.randn(3, 16, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(model.compute_logits(x), cold.compute_logits(x))


# ---- W4A8 b_strides: engine-computed (`kind: engine`) ---------------------------------------

def test_w4a8_b_strides_engine_spec() -> None:
    from derivgraph.examples.reference_w4a8 import build_w4a8_layer

    specs = [s for s in load_spec_file(ROOT / "specs" / "vllm_moe_w4a8_engine.yaml")
             if s.name == "vllm-cutlass-w4a8-b-strides"]
    assert len(specs) == 1
    layer = build_w4a8_layer()
    plan = compile_plan(layer, specs, require_match=True)
    held = layer.quant_method.b_strides1
    layer.quant_method.process_weights_after_loading(layer)  # the engine op runs again
    assert layer.quant_method.b_strides1 is not held
    assert plan.refill(verify=True).moved == []
    experts = layer.quant_method.moe_kernel.fused_experts
    assert layer.quant_method.b_strides1 is held and experts.b_strides1 is held


# ---- Kimi-K3 KDA decode front (loader-filled buffers) ------------------------------------------

KDA_KEYS = ["self_attn.decode_conv1d_weight", "self_attn.decode_norm_weight"]


def test_kimi_k3_kda_decode_front_a_b_a_in_place_reload() -> None:
    from derivgraph.examples.reference_kimi_k3_kda import build_kda, make_kda_weights

    _a_b_a(lambda s: build_kda(make_kda_weights(s)),
           lambda m, s: m.self_attn.load_weights(make_kda_weights(s), in_place=True), KDA_KEYS,
           None)


def test_kimi_k3_kda_in_place_reload_is_stale_without_the_plan() -> None:
    from derivgraph.examples.reference_kimi_k3_kda import build_kda, make_kda_weights

    model = build_kda(make_kda_weights(1))
    model.self_attn.load_weights(make_kda_weights(2), in_place=True)
    cold = build_kda(make_kda_weights(2))
    assert not torch.equal(model.self_attn.decode_norm_weight, cold.self_attn.decode_norm_weight)


# ---- GLM-5-next: indexer gate and KDA merged conv weight (built on the first forward) ------------

GLM5NEXT_KEYS = ["indexer._wp_fp32", "linear_attn._merged_conv_weight"]


def test_glm5next_first_forward_caches_a_b_a_in_place_reload() -> None:
    from derivgraph.examples.reference_glm5next import (
        build_glm5next,
        load_in_place,
        make_glm5next_weights,
    )

    _a_b_a(lambda s: build_glm5next(make_glm5next_weights(s)),
           lambda m, s: load_in_place(m, make_glm5next_weights(s)), GLM5NEXT_KEYS, None)


def test_glm5next_in_place_reload_is_stale_without_the_plan() -> None:
    from derivgraph.examples.reference_glm5next import (
        build_glm5next,
        load_in_place,
        make_glm5next_weights,
    )

    model = build_glm5next(make_glm5next_weights(1))
    load_in_place(model, make_glm5next_weights(2))
    model.indexer(torch.zeros(1, 32))  # a forward after the reload does not rebuild them
    cold = build_glm5next(make_glm5next_weights(2))
    for key in ("_wp_fp32",):
        assert not torch.equal(getattr(model.indexer, key), getattr(cold.indexer, key))
    assert not torch.equal(model.linear_attn(), cold.linear_attn._merged_conv_weight)


def test_glm5next_specs_skip_caches_not_built_yet() -> None:
    from derivgraph.examples.reference_glm5next import Glm5NextLinearAttention, Indexer

    root = nn.Module()
    root.indexer, root.linear_attn = Indexer(), Glm5NextLinearAttention()
    assert sorted(compile_plan(root, SPECS).entries) == []


# ---- LiLiCorr head: every inference buffer rebound by every load --------------------------------

LILICORR_KEYS = ["lilicorr._attn_bias", "lilicorr._factor_input_splits.0",
                 "lilicorr._factor_input_splits.1", "lilicorr._factor_input_splits.2",
                 "lilicorr._fused_edge_bias", "lilicorr._fused_edge_weight",
                 "lilicorr._is_top1_col", "lilicorr._rank_frac_col"]


@pytest.mark.parametrize("topk", [1, 2, 4])
@pytest.mark.parametrize("materialize", [True, False], ids=["load_weights", "in-place"])
def test_lilicorr_inference_buffers_a_b_a(materialize: bool, topk: int) -> None:
    from derivgraph.examples.reference_lilicorr import (
        build_lilicorr,
        load_lilicorr,
        make_lilicorr_weights,
    )

    _a_b_a(lambda s: build_lilicorr(make_lilicorr_weights(s), topk=topk),
           lambda m, s: load_lilicorr(m, make_lilicorr_weights(s), materialize=False),
           LILICORR_KEYS,
           (lambda m: m.lilicorr.materialize_inference_buffers(torch.device("cpu"),
                                                               torch.bfloat16))
           if materialize else None)


def test_lilicorr_factor_input_splits_tuple_is_kept_across_loads() -> None:
    """vLLM rebinds a new tuple on every load; the plan puts the startup tuple back."""
    from derivgraph.examples.reference_lilicorr import (
        build_lilicorr,
        load_lilicorr,
        make_lilicorr_weights,
    )

    model = build_lilicorr(make_lilicorr_weights(1))
    plan = compile_plan(model, SPECS)
    source = plan.source()  # layout copies (contiguous, same-dtype cast) make no temporary:
    assert "ops.contiguous" not in source and "ops.cast" not in source, source
    assert "ops.add.out(" in source  # out= the buffer; the two dim-0 cats: rows of their buffers,
    assert "_fused_edge_weight[0:8], lilicorr._fused_edge_weight[8:16]" in source  # copied with
    assert source.count("torch._foreach_copy_(") == 1 and "ops.cat" not in source  # the splits
    head = model.lilicorr
    startup = head._factor_input_splits
    items = [(t, t.data_ptr()) for t in startup]
    for seed in (2, 1):
        load_lilicorr(model, make_lilicorr_weights(seed))
        assert head._factor_input_splits is not startup  # the engine's new tuple
        assert plan.refill(verify=True).moved == []
        assert head._factor_input_splits is startup
        assert all(now is t and now.data_ptr() == p
                   for (t, p), now in zip(items, head._factor_input_splits))
        w = build_lilicorr(make_lilicorr_weights(seed)).lilicorr.factor_input_proj.weight
        assert all(torch.equal(a, b) for a, b in zip(startup, w.split(16, dim=1)))


def test_lilicorr_selective_run_puts_back_every_holder_the_engine_rebuilt() -> None:
    """vLLM's load_weights rebinds every buffer even when one weight changed; a run over the
    changed name recomputes its cone and re-binds the rest too (their values still hold)."""
    from derivgraph.examples.reference_lilicorr import build_lilicorr, make_lilicorr_weights

    model = build_lilicorr(make_lilicorr_weights(1))
    plan = compile_plan(model, SPECS)
    head = model.lilicorr
    startup = {k: get_path(model, k) for k in LILICORR_KEYS}
    with torch.no_grad():
        head.relative_slot_bias.mul_(2)
    head.materialize_inference_buffers(torch.device("cpu"), torch.bfloat16)  # all rebound
    fresh = {k: get_path(model, k).clone() for k in LILICORR_KEYS}
    report = plan.run(["lilicorr.relative_slot_bias"], verify=True)
    assert report.moved == []
    for k in LILICORR_KEYS:
        assert get_path(model, k) is startup[k] and torch.equal(startup[k], fresh[k]), k


def test_lilicorr_feature_columns_are_constants_kept_and_rewritten() -> None:
    """_rank_frac_col / _is_top1_col read no weight: computed at compile, out of the pass, and
    written back from the compile-time values when their memory was lost (level-2 sleep)."""
    from derivgraph.examples.reference_lilicorr import build_lilicorr, make_lilicorr_weights

    model = build_lilicorr(make_lilicorr_weights(1), topk=4)
    plan = compile_plan(model, SPECS)
    keys = ["lilicorr._is_top1_col", "lilicorr._rank_frac_col"]
    assert sorted(plan.constant_entries) == keys
    head = model.lilicorr
    startup = {k: get_path(model, k) for k in keys}
    assert torch.equal(head._rank_frac_col, torch.tensor([[[0.0, 1 / 3, 2 / 3, 1.0]]]))
    assert torch.equal(head._is_top1_col, torch.tensor([[[1.0, 0.0, 0.0, 0.0]]]))
    want = {k: v.clone() for k, v in startup.items()}
    for t in startup.values():
        t.fill_(float("nan"))  # the memory was discarded
    assert plan.rewrite_constants() == 2
    for k in keys:
        assert get_path(model, k) is startup[k] and torch.equal(startup[k], want[k]), k


def test_lilicorr_load_moves_and_in_place_reload_is_stale_without_the_plan() -> None:
    from derivgraph.examples.reference_lilicorr import (
        build_lilicorr,
        load_lilicorr,
        make_lilicorr_weights,
    )

    model = build_lilicorr(make_lilicorr_weights(1))
    head = model.lilicorr
    before = {k: get_path(model, k) for k in LILICORR_KEYS}
    splits = head._factor_input_splits
    load_lilicorr(model, make_lilicorr_weights(2))
    for k in LILICORR_KEYS:  # a captured graph reads `before`
        assert get_path(model, k) is not before[k], k
    assert head._factor_input_splits is not splits
    load_lilicorr(model, make_lilicorr_weights(1), materialize=False)
    cold = build_lilicorr(make_lilicorr_weights(1))
    for k in ("lilicorr._fused_edge_weight", "lilicorr._attn_bias",
              "lilicorr._factor_input_splits.0"):
        assert not torch.equal(get_path(model, k), get_path(cold, k)), k


# ---- Kimi-K3 specialized decode: TP16 padded dense down projection -------------------------------

DENSE_KEYS = ["specialized_decode.feed_forward.0.down.weight"]


def test_kimi_k3_dense_down_tp16_a_b_a_in_place_reload() -> None:
    from derivgraph.examples.reference_kimi_k3_dense import (
        build_kimi_k3_dense,
        load_in_place,
        make_kimi_k3_dense_weights,
    )

    _a_b_a(lambda s: build_kimi_k3_dense(make_kimi_k3_dense_weights(s)),
           lambda m, s: load_in_place(m, make_kimi_k3_dense_weights(s)), DENSE_KEYS, None)
    model = build_kimi_k3_dense(make_kimi_k3_dense_weights(1))
    padded = model.specialized_decode.feed_forward[0].down.weight
    assert padded.shape == (16, 128) and not padded[:, 40:].any()  # zero K padding


def test_kimi_k3_dense_down_is_stale_without_the_plan_and_unmatched_below_tp16() -> None:
    from derivgraph.examples.reference_kimi_k3_dense import (
        build_kimi_k3_dense,
        load_in_place,
        make_kimi_k3_dense_weights,
    )

    model = build_kimi_k3_dense(make_kimi_k3_dense_weights(1))
    load_in_place(model, make_kimi_k3_dense_weights(2))
    cold = build_kimi_k3_dense(make_kimi_k3_dense_weights(2))
    key = "specialized_decode.feed_forward.0.down.weight"
    assert not torch.equal(_tensors(model, [key])[key], _tensors(cold, [key])[key])
    tp8 = build_kimi_k3_dense(make_kimi_k3_dense_weights(1), tp=8)
    assert sorted(compile_plan(tp8, SPECS).entries) == []
