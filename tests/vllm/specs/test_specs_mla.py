"""The built-in MLA specs, proven against vLLM 0.33.0's own code on CPU: W_UV / W_UK_T
absorbed from kv_b_proj by vLLM's real MLAAttention (bf16 and FP8 block), and DeepSeek-V4's ROCm
compressor fusion (vLLM's own step, with its ``.set_()``)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from derivgraph import compile_plan  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402
from tests.fixtures.vllm_attention_layers import (  # noqa: E402
    MLA_CASES,
    _DcpGroupOfOne,
    _Linear,
    _mla_layer,
    _mla_load,
)
from tests.fixtures.vllm_moe_checkpoints import _gen  # noqa: E402

SPECS = builtin_specs()



# ---- MLA: W_UV / W_UK_T absorbed from kv_b_proj by vLLM's real MLAAttention ---------------------

@pytest.mark.parametrize("kind", sorted(MLA_CASES))
def test_mla_absorbed_weights_match_vllm(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm.model_executor.layers.attention.mla_attention as mla_mod

    monkeypatch.setattr(mla_mod, "get_dcp_group", lambda: _DcpGroupOfOne())
    root = nn.Module()
    root.attn = _mla_layer(kind, 0, dcp=True)
    attn = root.attn
    assert attn.W_UV.shape == (2, 256, 64) and attn.W_UK_T.shape == (2, 64, 256)
    mla_specs = [s for s in SPECS if s.name in (MLA_CASES[kind], "vllm-mla-dcp-qrep")]
    assert len(compile_plan(root, SPECS)) == 3 + 3  # + the attention layer's kv-scale floats
    plan = compile_plan(root, mla_specs, require_match=True)
    assert sorted(plan.entries) == ["attn.W_UK_T", "attn.W_UK_T_dcp_qrep", "attn.W_UV"]
    assert all(e.adopted for e in plan.entries.values())  # bit-exact with vLLM's values
    startup = {k: (e.storage, e.storage.data_ptr()) for k, e in plan.entries.items()}
    for seed in (1, 0):  # A -> B -> A: vLLM's post-load step on the live layer, then refill
        _mla_load(attn, kind, seed)
        assert plan.refill(verify=True).moved == []
        cold = _mla_layer(kind, seed, dcp=True)
        for key, (obj, ptr) in startup.items():
            assert get_path(root, key) is obj and obj.data_ptr() == ptr
            assert torch.equal(obj, get_path(cold, key.split(".", 1)[1])), key
    # an in-place reload (no post-load step): the plan recomputes what vLLM would
    with torch.no_grad():
        attn.kv_b_proj.weight.copy_(_mla_layer(kind, 1).kv_b_proj.weight)
        if kind == "fp8-block":
            attn.kv_b_proj.weight_scale_inv.copy_(_mla_layer(kind, 1).kv_b_proj.weight_scale_inv)
    assert plan.run(verify=True).moved == []
    cold = _mla_layer(kind, 1, dcp=True)
    for name in ("W_UV", "W_UK_T", "W_UK_T_dcp_qrep"):
        assert torch.equal(getattr(attn, name), getattr(cold, name)), name


# ---- DeepSeek-V4 ROCm compressor fusion (vLLM's own step, with its `.set_()`) -------------------

def test_deepseek_v4_rocm_fused_compressor_matches_vllm() -> None:
    from types import SimpleNamespace

    with pytest.MonkeyPatch.context() as mp:  # amd.rocm reads the GPU arch at import
        mp.setattr(torch.cuda, "get_device_properties", lambda *a, **k: SimpleNamespace(
            gcnArchName="gfx950", name="stub", major=9, minor=5, total_memory=0,
            multi_processor_count=1))
        from vllm.models.deepseek_v4.amd.rocm import DeepseekV4ROCMAiterMLAAttention

    def linear(rows: int, seed: int) -> nn.Module:
        m = nn.Module()
        m.fused_wkv_wgate = _Linear(rows, 16)
        with torch.no_grad():
            m.fused_wkv_wgate.weight.copy_(torch.randn(rows, 16, generator=_gen(seed)))
        return m

    attn = DeepseekV4ROCMAiterMLAAttention.__new__(DeepseekV4ROCMAiterMLAAttention)
    nn.Module.__init__(attn)
    attn.register_buffer("_fused_compressor_weight", None, persistent=False)
    attn.compressor, attn.indexer = linear(12, 1), nn.Module()
    attn.indexer.compressor = linear(4, 2)
    main = attn.compressor.fused_wkv_wgate.weight.detach().clone()
    indexer = attn.indexer.compressor.fused_wkv_wgate.weight.detach().clone()
    assert attn.prepare_compressor_gemm_fusion() is True
    root = nn.Module()
    root.attn = attn
    plan = compile_plan(root, SPECS)
    entry = plan.entries["attn._fused_compressor_weight"]
    assert entry.adopted and entry.storage is attn._fused_compressor_weight
    assert torch.equal(entry.storage, torch.cat((main, indexer), 0))
    # vLLM's `.set_()`: the indexer Parameter now lives inside the fused storage, at main*K
    w = attn.indexer.compressor.fused_wkv_wgate.weight
    assert w.untyped_storage().data_ptr() == entry.storage.untyped_storage().data_ptr()
    assert w.storage_offset() == main.numel()
