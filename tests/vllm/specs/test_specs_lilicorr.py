"""The LiLiCorr head's built-in specs, proven against vLLM 0.33.0's own
``materialize_inference_buffers`` on CPU (bare ``LiLiCorrHead`` instances)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from derivgraph import AdoptionError, compile_plan  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402

SPECS = builtin_specs()



# ---- LiLiCorr head: vLLM's own materialize_inference_buffers -----------------------------------

LILICORR_KEYS = ["lilicorr._attn_bias", "lilicorr._factor_input_splits.0",
                 "lilicorr._factor_input_splits.1", "lilicorr._factor_input_splits.2",
                 "lilicorr._fused_edge_bias", "lilicorr._fused_edge_weight",
                 "lilicorr._is_top1_col", "lilicorr._rank_frac_col"]


def _vllm_lilicorr_root(seed: int, topk: int = 2, dtype: torch.dtype = torch.bfloat16
                        ) -> nn.Module:
    """vLLM's LiLiCorrHead (bare instance) holding the reference head's modules and Parameters,
    loaded and materialized by vLLM's own ``materialize_inference_buffers``."""
    from vllm.model_executor.models.lilicorr import LiLiCorrHead

    from derivgraph.examples.reference_lilicorr import build_lilicorr, make_lilicorr_weights

    ref = build_lilicorr(make_lilicorr_weights(seed, dtype), topk=topk).lilicorr
    head = LiLiCorrHead.__new__(LiLiCorrHead)
    nn.Module.__init__(head)
    for name in ("hidden_size", "factor_dim", "block_size", "num_candidate_slots",
                 "candidate_topk", "num_heads"):
        setattr(head, name, getattr(ref, name))
    for name in ("out_head", "in_head", "factor_input_proj"):
        setattr(head, name, getattr(ref, name))
    for name in ("slot_embedding", "relative_slot_bias", "same_slot_bias"):
        setattr(head, name, getattr(ref, name))
    head.materialize_inference_buffers(head.slot_embedding.device, head.slot_embedding.dtype)
    root = nn.Module()
    root.lilicorr = head
    return root


def _bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    from derivgraph.planner import bits_equal

    return a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() \
        and bits_equal(a, b)


@pytest.mark.parametrize(("topk", "dtype"), [(2, torch.bfloat16), (1, torch.float32),
                                             (4, torch.float16)])
def test_lilicorr_every_buffer_matches_vllm_materialize(topk: int, dtype: torch.dtype) -> None:
    """Conformance: the spec's values are vLLM's, bit for bit (compile adopts vLLM's tensors,
    and an eager evaluation of every formula equals them); then A -> B -> A with different
    weights through vLLM's own step (refill) and through an in-place load (recompute): 0 moved,
    the startup tensors and the startup tuple object kept, bit-exact with a cold start."""
    from derivgraph.examples.reference_lilicorr import load_lilicorr, make_lilicorr_weights

    model = _vllm_lilicorr_root(1, topk, dtype)
    head = model.lilicorr
    plan = compile_plan(model, SPECS)
    assert sorted(plan.entries) == LILICORR_KEYS
    assert all(plan.entries[k].adopted for k in LILICORR_KEYS)
    values = plan.evaluate()
    for k in LILICORR_KEYS:  # every formula, evaluated eagerly, is vLLM's value bit for bit
        assert _bits(values[k].contiguous(), get_path(model, k)), k
    assert head._attn_bias.shape == (2, 3 * topk, 3 * topk)
    assert "arange" not in plan.source() and "repeat_interleave" not in plan.source()
    startup = {k: (get_path(model, k), get_path(model, k).data_ptr()) for k in LILICORR_KEYS}
    splits = head._factor_input_splits
    for seed, engine in ((2, True), (1, False), (2, False), (1, True)):
        load_lilicorr(model, make_lilicorr_weights(seed, dtype), materialize=False)
        if engine:  # vLLM's load_weights ends with this: new tensors and a new tuple
            head.materialize_inference_buffers(head.slot_embedding.device,
                                               head.slot_embedding.dtype)
            assert head._attn_bias is not startup["lilicorr._attn_bias"][0]
            assert head._factor_input_splits is not splits
            report = plan.refill(verify=True)
        else:
            report = plan.run(verify=True)
        assert report.moved == []
        assert head._factor_input_splits is splits
        cold = _vllm_lilicorr_root(seed, topk, dtype)
        for k in LILICORR_KEYS:
            obj, ptr = startup[k]
            assert get_path(model, k) is obj and obj.data_ptr() == ptr, k
            assert _bits(obj, get_path(cold, k)), (k, seed, engine)
    plan.run(verify=True)  # idempotent
    cold = _vllm_lilicorr_root(1, topk, dtype)
    assert all(_bits(get_path(model, k), get_path(cold, k)) for k in LILICORR_KEYS)


def test_lilicorr_attention_bias_gather_differs_per_distance() -> None:
    """Canary for the formula's offset: a bias table with one value per distance makes every
    (q, k) entry name its slot distance, so a gather one slot off cannot match vLLM."""
    model = _vllm_lilicorr_root(1)
    head = model.lilicorr
    with torch.no_grad():
        head.relative_slot_bias.copy_(torch.arange(7, dtype=torch.bfloat16).expand(2, 7))
        head.same_slot_bias.fill_(100.0)
    head.materialize_inference_buffers(torch.device("cpu"), torch.bfloat16)
    slot = torch.arange(3).repeat_interleave(2)
    want = (slot.view(-1, 1) - slot.view(1, -1) + 3).to(torch.bfloat16)
    want = want + 100.0 * (slot.view(-1, 1) == slot.view(1, -1)).to(torch.bfloat16)
    assert torch.equal(head._attn_bias, want.expand(2, 6, 6))  # vLLM's own value
    spec = next(s for s in SPECS if s.name == "vllm-lilicorr-inference-buffers")
    off_by_one = spec.model_copy(deep=True)
    off_by_one.derived[0].formula = spec.derived[0].formula.replace("block_size - 1",
                                                                    "block_size - 2")
    with pytest.raises(AdoptionError, match="_attn_bias"):
        compile_plan(model, [off_by_one])
    plan = compile_plan(model, [spec])
    with torch.no_grad():
        head.same_slot_bias.fill_(-3.0)  # an in-place load: vLLM's buffer goes stale
    plan.run(verify=True)
    vllm_value = head._build_attention_bias(device=torch.device("cpu"), dtype=torch.bfloat16)
    assert torch.equal(head._attn_bias, vllm_value)
    assert not torch.equal(vllm_value, want.expand(2, 6, 6))
