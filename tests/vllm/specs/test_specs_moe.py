"""The built-in vLLM 0.33.0 MoE specs, proven against vLLM's own code on CPU.

Every MoE case builds a small layer shaped like vLLM's ``RoutedExperts`` whose quant method's
post-load step calls vLLM's REAL quant-config builders and experts constructors, exactly as the
vLLM quant methods do (``Fp8MoEMethod._init_moe_kernel``, ``ModelOptNvFp4FusedMoE.
_build_moe_kernel``, ...). ``derivgraph.compile_plan`` must then ADOPT every tensor vLLM made:
adoption checks values bit-exactly against the spec formulas, so a wrong formula (or a wrong
operation order) fails here. A reload with different scales reruns the post-load step, which
rebuilds the quant config and the experts; ``plan.refill`` must put the new values into the
startup storage that the OLD objects (what a captured CUDA graph reads) still hold, re-bind the
new objects to that storage, and match a cold start bit for bit (A -> B -> A).

The layer, quant methods, checkpoints and cases are in ``tests/fixtures/vllm_moe_*.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.vllm

pytest.importorskip("vllm")

from vllm.model_executor.layers.fused_moe.experts.flashinfer_cutlass_moe import (  # noqa: E402
    FlashInferExperts,
)
from vllm.model_executor.layers.fused_moe.experts.triton_deep_gemm_moe import (  # noqa: E402
    TritonOrDeepGemmExperts,
)
from vllm.model_executor.layers.fused_moe.oracle.fp8 import Fp8MoeBackend  # noqa: E402

from derivgraph import AdoptionError, compile_plan, load_spec_text  # noqa: E402
from derivgraph.errors import EngineComputedError  # noqa: E402
from derivgraph.paths import get_path  # noqa: E402
from derivgraph.spec.load import builtin_specs  # noqa: E402
from tests.fixtures.vllm_moe_cases import CASES  # noqa: E402
from tests.fixtures.vllm_moe_checkpoints import fp8_block_ckpt, fp8_per_tensor_ckpt  # noqa: E402
from tests.fixtures.vllm_moe_layers import (  # noqa: E402
    PREFIX,
    Fp8MoEMethod,
    MoECase,
    cold_start,
    reload,
)
from tests.fixtures.vllm_spec_checks import (  # noqa: E402
    _holder_and_name,
    _same,
    _value,
    assert_expected,
    snapshot,
)

ROOT = Path(__file__).resolve().parents[3]
SPECS = builtin_specs()



@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_moe_specs_adopt_and_refill_vllm_tensors(case: MoECase) -> None:
    ckpt_a, ckpt_b = case.ckpt(0), case.ckpt(1)
    model = cold_start(case, ckpt_a)
    layer = model.layers[0]
    keys = sorted(PREFIX + k for k in case.expected)
    engine_a = snapshot(model, keys)
    engine_objects = {k: get_path(model, k) for k in keys}

    plan = compile_plan(model, SPECS)
    # Exactly the expected tensors are bound, by exactly the expected specs, and every tensor
    # vLLM made was ADOPTED (kept as is, after a bit-exact value check against the formula).
    assert sorted(plan.entries) == keys
    assert {e.node.bound.spec.name for e in plan.entries.values()} == case.specs
    strict = compile_plan(model, [s for s in SPECS if s.name in case.specs], require_match=True)
    assert sorted(strict.entries) == keys
    for key, entry in plan.entries.items():
        if entry.node.kind == "scalar":
            assert _same(entry.storage, engine_a[key]), key  # the engine's own Python number
        elif key[len(PREFIX):] in case.rebound:
            assert not entry.adopted and entry.storage is not engine_objects[key], key
            assert _same(entry.storage, engine_a[key]), key
        else:
            assert entry.adopted, f"{key} was not adopted"
            assert entry.storage is engine_objects[key], key
    assert_expected(case, model, ckpt_a)
    for rel, target in case.aliases.items():
        assert get_path(model, PREFIX + rel) is get_path(model, PREFIX + target), rel

    # What a captured CUDA graph holds: the startup objects, their addresses and their holders.
    startup = {k: e.storage for k, e in plan.entries.items()}
    ptrs = {k: t.data_ptr() for k, t in startup.items() if isinstance(t, torch.Tensor)}
    old_holders = {k: _holder_and_name(model, k) for k in keys}
    old_experts = layer.quant_method.moe_kernel.fused_experts
    old_qc = layer.quant_method.moe_quant_config

    # Reload with different scales: vLLM rebuilds the quant config and the experts.
    reload(model, ckpt_b)
    assert layer.quant_method.moe_kernel.fused_experts is not old_experts
    assert layer.quant_method.moe_quant_config is not old_qc
    assert plan.moved(), "the engine's rebuild should have moved graph-visible tensors"
    engine_b = snapshot(model, keys)

    report = plan.refill(verify=True)
    assert report.moved == []
    assert report.recapture_required == []
    tensors = [k for k, e in plan.entries.items() if e.node.kind not in ("alias", "scalar")]
    assert report.taken_from_engine == len(tensors)
    cold_b = cold_start(case, ckpt_b)
    for key in keys:
        current = get_path(model, key)
        owner, name = old_holders[key]
        if key in ptrs:
            assert current is startup[key], f"{key}: not re-bound to the startup object"
            assert current.data_ptr() == ptrs[key], key
            assert getattr(owner, name) is startup[key], f"{key}: the old holder lost its tensor"
        else:  # a Python scalar: the plan tracks its value (a graph would need a recapture)
            assert _same(plan.entries[key].storage, current), key
        assert _same(current, engine_b[key]), f"{key}: refill lost the engine's new value"
        assert _same(current, _value(get_path(cold_b, key))), f"{key}: differs from a cold start"
    assert_expected(case, model, ckpt_b)
    for rel, target in case.aliases.items():
        assert get_path(model, PREFIX + rel) is get_path(model, PREFIX + target), rel
    if case.weight_valued:
        assert any(not _same(engine_a[k], engine_b[k]) for k in keys), "A and B must differ"

    # Recomputing from the formulas (not taking the engine's values) gives the same bits;
    # engine-computed tensors (issue12) have no formula: the recompute path refuses them.
    if any(e.node.kind == "engine" for e in plan.entries.values()):
        with pytest.raises(EngineComputedError, match="is engine-computed"):
            plan.run()
    else:
        report = plan.run(verify=True)
        assert report.moved == []
        for key in keys:
            assert _same(get_path(model, key), engine_b[key]), key

    # A -> B -> A: bit-exact against the cold start of A, nothing moved.
    reload(model, ckpt_a)
    report = plan.refill(verify=True)
    assert report.moved == []
    cold_a = cold_start(case, ckpt_a)
    for key in keys:
        if key in ptrs:
            assert get_path(model, key) is startup[key], key
        assert _same(get_path(model, key), _value(get_path(cold_a, key))), key
        assert _same(get_path(model, key), engine_a[key]), key


def test_adoption_is_bit_exact_so_operation_order_matters() -> None:
    """vLLM computes g1_scale_c = g1_alphas * (1.0 / a2_scale). The same value written as
    g1_alphas / a2_scale differs in the last bits, and adoption refuses it: the built-in
    formula is vLLM's exact one."""
    case = next(c for c in CASES if c.id == "nvfp4-trtllm-swiglu")
    model = cold_start(case, case.ckpt(0))
    good = "formula: w13_weight_scale_2 * (1.0 / w2_input_scale)"
    text = (ROOT / "specs" / "vllm_moe_nvfp4.yaml").read_text()
    assert good in text
    reordered = load_spec_text(text.replace(good, "formula: w13_weight_scale_2 / w2_input_scale"),
                               "reordered.yaml")
    with pytest.raises(AdoptionError, match=r"g1_scale_c differs from the formula"):
        compile_plan(model, reordered)
    assert len(compile_plan(model, load_spec_text(text, "vllm_moe_nvfp4.yaml"))) > 0


def test_triton_or_deepgemm_has_no_derived_tensors() -> None:
    """TritonOrDeepGemmExperts' inner DeepGemmExperts keeps only config floats (gemm1_alpha=1.0,
    gemm1_beta=0.0, clamp None) and TritonExperts nothing: no built-in spec may bind to it."""
    case = MoECase("fp8-triton-or-deepgemm", Fp8MoEMethod, Fp8MoeBackend.DEEPGEMM,
                   TritonOrDeepGemmExperts, fp8_block_ckpt, set(), {},
                   options={"block_shape": [128, 128]})
    model = cold_start(case, case.ckpt(0))
    experts = model.layers[0].quant_method.moe_kernel.fused_experts
    assert type(experts.experts).__name__ == "DeepGemmExperts"
    assert not any(isinstance(v, torch.Tensor) for v in vars(experts.experts).values())
    assert len(compile_plan(model, SPECS)) == 0


def test_swiglu_constants_are_not_invented_where_vllm_holds_none() -> None:
    """SILU without SwiGLU parameters: the experts hold None; no spec may allocate one."""
    case = MoECase("fp8-flashinfer-cutlass-plain", Fp8MoEMethod, Fp8MoeBackend.FLASHINFER_CUTLASS,
                   FlashInferExperts, fp8_per_tensor_ckpt, set(), {})
    model = cold_start(case, case.ckpt(0))
    experts = model.layers[0].quant_method.moe_kernel.fused_experts
    assert experts.gemm1_alpha is None and experts.gemm1_clamp_limit is None
    plan = compile_plan(model, SPECS)
    assert {e.node.bound.spec.name for e in plan.entries.values()} == {
        "vllm-fp8-flashinfer-cutlass-per-tensor"}
    assert experts.gemm1_alpha is None and experts.gemm1_clamp_limit is None
