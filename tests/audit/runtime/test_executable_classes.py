"""The undeclared error classes of the static audit, tried on CPU by ``derivgraph audit vllm``:
real verdicts of the cases that run, observed blockers of those that cannot."""

from __future__ import annotations

import json

import pytest

vllm = pytest.importorskip("vllm")
pytestmark = [pytest.mark.vllm, pytest.mark.slow]

from vllm_integration.blockers import attempt, blocker_of  # noqa: E402
from vllm_integration.builders import NotRunnable  # noqa: E402
from vllm_integration.class_cases import class_cases  # noqa: E402
from vllm_integration.class_table import TABLE  # noqa: E402
from vllm_integration.executable_audit import Observed, Verdict, run_audit  # noqa: E402
from vllm_integration.executable_audit import audit_cases as cases  # noqa: E402

RUNS = ["nvfp4-moe-flashinfer-b12x", "router-gate-bf16x3", "moe-runner-fused-gate",
        "kimi-k3-prepared-kda", "kimi-k3-prepared-mla", "kimi-k3-prepared-projection",
        "mla-flashinfer-sparse",
        "mxfp8-linear-xpu-bmm", "fp8-block-linear-xpu-bmm", "mla-flashinfer", "mla-tokenspeed",
        "dflash2-beam-context-kv", "kimi-k3-dspark-context-kv"]
BLOCKED = ["mxfp4-moe-gpt-oss", "mxfp4-moe", "mxfp4-moe-online", "nvfp4-linear-b12x",
           "fp8-linear", "attention-flashinfer", "muse-spark-nvfp4-moe"]


@pytest.fixture(scope="module")
def audit():
    return run_audit(names=RUNS + BLOCKED)


def _row(audit, cls, attr):
    return next(r for r in audit.rows if r.cls == cls and r.attr == attr and r.static)


def test_runnable_classes_get_their_real_verdicts(audit):
    v = audit.verdicts()
    for attr in ("w1_sf_mma", "w2_sf_mma", "_fc2_input_scale"):  # rebuilt experts: moved
        assert v[("FlashInferB12xExperts", attr)] is Verdict.CONFIRMED
        assert _row(audit, "FlashInferB12xExperts", attr).observed is Observed.MOVED
    # the lazy fused gate is built once by the first forward and never rebuilt: stale
    runner = _row(audit, "MoERunner", "_combined_gate_weight")
    assert (runner.observed, runner.verdict) == (Observed.STALE, Verdict.CONFIRMED)
    assert runner.paths == ("layers.0._combined_gate_weight", "layers.1._combined_gate_weight")
    # Kimi-K3's prepared containers, built once after load (as build_providers does): the
    # KDA tuple holds copies (stale after a reload), the MLA tuple only references to kept
    # parameters (fresh: the static error is refuted)
    kda = _row(audit, "PreparedKda", "weights")
    assert (kda.observed, kda.verdict) == (Observed.STALE, Verdict.CONFIRMED)
    assert "layers.0.core.weights[0]" in kda.paths
    mla = _row(audit, "PreparedMla", "weights")
    assert (mla.observed, mla.verdict) == (Observed.FRESH, Verdict.REFUTED)
    # the host floats of the KV scales, kept in a tuple built once
    stock = _row(audit, "PreparedMla", "stock_scales")
    assert (stock.observed, stock.verdict) == (Observed.STALE, Verdict.CONFIRMED)
    assert "layers.0.core.stock_scales[0]" in stock.paths
    # host scale floats cached by the sparse MLA impl keep the first load's KV scales
    for attr in ("bmm1_scale", "bmm2_scale"):
        row = _row(audit, "FlashInferMLASparseImpl", attr)
        assert (row.observed, row.verdict) == (Observed.STALE, Verdict.CONFIRMED)


def test_the_xpu_bmm_kernels_rebuild_their_batched_tensors_on_the_layer(audit):
    # the XPU kernels' post-load (platform answered "XPU") stores the batched weight and scale
    # of a grouped layer as plain layer attributes: new tensors on every reload
    for cls, attr in (("XPUMxFp8LinearKernel", "bmm_scale"),
                      ("XPUMxFp8LinearKernel", "bmm_weight"),
                      ("XPUFp8BlockScaledMMKernel", "bmm_scale")):
        row = _row(audit, cls, attr)
        assert (row.observed, row.verdict) == (Observed.MOVED, Verdict.CONFIRMED), (cls, attr)
        assert row.paths == (f"layers.0.{attr}", f"layers.1.{attr}")
    assert audit.cases["mxfp8-linear-xpu-bmm"] == audit.cases["fp8-block-linear-xpu-bmm"] == "ran"


def test_the_bf16x3_router_reload_raises_in_vllm(audit):
    row = _row(audit, "_GateLinearMethod", "_bf16x3_weight")
    assert (row.observed, row.verdict) == (Observed.RELOAD_FAILED, Verdict.CONFIRMED)
    blocker = audit.blockers["router-gate-bf16x3"]
    assert blocker.exception == "KeyError" and "_bf16x3_weight" in blocker.message
    assert blocker.last_vllm_frame.startswith("vllm/model_executor/model_loader/reload/"
                                              "layerwise.py:446 ")
    # the other findings of the case were not observed, not confirmed
    assert _row(audit, "UnquantizedLinearMethod", "weight").verdict is Verdict.NOT_RUNNABLE


def test_blocked_cases_report_the_observed_exception_and_frames(audit):
    b = audit.blockers
    oracle = "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py"
    for case, first, last in (
            ("mxfp4-moe-gpt-oss", "vllm/model_executor/layers/quantization/mxfp4.py:158 in "
             "__init__", f"{oracle}:754 in select_mxfp4_moe_backend"),
            ("mxfp4-moe", "vllm/model_executor/layers/quantization/mxfp4.py:578 in __init__",
             f"{oracle}:832 in select_deepseek_v4_mxfp4_moe_backend"),
            ("mxfp4-moe-online", "vllm/model_executor/layers/quantization/online/mxfp4.py:155 "
             "in __init__", f"{oracle}:754 in select_mxfp4_moe_backend")):
        assert (b[case].exception, b[case].first_vllm_frame, b[case].last_vllm_frame) == (
            "NotImplementedError", first, last), case
        assert b[case].message.startswith("No MXFP4 MoE backend supports the deployment")
    assert b["attention-flashinfer"].last_vllm_frame.startswith(
        "vllm/v1/attention/backends/flashinfer.py:2099 in __init__")
    assert _row(audit, "FlashInferImpl", "_o_scale_float").verdict is Verdict.NOT_RUNNABLE
    assert b["nvfp4-linear-b12x"].message == "NVFP4 weights must be on CUDA"
    assert b["fp8-linear"].in_vllm and "ScaledMM" in b["fp8-linear"].message
    for attr in ("w13_weight", "w2_weight", "w13_precision_config", "w2_precision_config"):
        assert audit.verdicts()[("GptOssMxfp4MoEMethod", attr)] is Verdict.NOT_RUNNABLE
    assert all(audit.cases[c] != "ran" for c in BLOCKED)


def test_no_case_crashes_and_every_class_of_the_table_has_one():
    table = json.loads(TABLE.read_text())["classes"]
    names = {c.name for c in cases()}
    # a class without a case yet is marked so (QuarkOCP_MX_MoEMethod: test_class_table.py)
    tried = [r for r in table if r["outcome"] != "no case"]
    assert all(r["case"] is None for r in table if r["outcome"] == "no case")
    assert tried and all(r["case"] in names for r in tried)
    # and no class case outlives its class: each is there for a class of the table
    assert {q for c in class_cases() for q in c.classes} <= {r["class"] for r in table}
    assert {r["outcome"] for r in table} <= {"ran", "reload failed", "blocked", "no case"}
    for case in cases():
        try:
            case.build(0)
        except NotRunnable as exc:  # the only way a case may fail to build
            assert exc.reason


def test_canary_a_container_of_another_class_is_not_matched(audit):
    # plant: ask for the tuple entries under a class that does not hold them
    from vllm_integration.executable_audit import _held

    entry = type("E", (), {"holder": "tuple"})()
    model = type("M", (), {})()
    model.core = type("PreparedKda", (), {})()
    assert _held(model, "core.weights[0]", entry, "weights", {"PreparedKda"})
    assert not _held(model, "core.weights[0]", entry, "weights", {"PreparedMla"})
    assert not _held(model, "core.weights[0]", entry, "scales", {"PreparedKda"})


def test_canary_only_a_layer_attribute_store_is_looked_for_on_the_layer():
    from derivgraph.audit.static.semantics import Store
    from vllm_integration.executable_audit import _holders

    of = {"XPUMxFp8LinearKernel": {"XPUMxFp8LinearKernel"}}
    store = type("F", (), {"cls": "XPUMxFp8LinearKernel", "store": Store.LAYER_ATTRIBUTE})()
    assert _holders(store, of, {"CaseLayer"}) == {"XPUMxFp8LinearKernel", "CaseLayer"}
    store.store = Store.OBJECT_ATTRIBUTE  # plant: kept on the kernel, not on the layer
    assert _holders(store, of, {"CaseLayer"}) == {"XPUMxFp8LinearKernel"}


def test_canary_blocker_of_a_failure_outside_vllm_has_no_frame():
    def harness():
        raise LookupError("planted")

    reason = attempt("X", harness)
    assert reason() == "X: LookupError: planted (no vLLM frame)"
    assert reason.blocker.in_vllm is False
    try:
        import torch

        torch.ops._C.convert_weight_packed  # noqa: B018 - what vLLM's CPU path calls
    except AttributeError as exc:
        assert blocker_of(exc).first_vllm_frame is None


def test_the_new_verdicts_feed_the_static_report(audit):
    from derivgraph.audit.static.scan import scan
    from derivgraph.audit.static.verdicts import apply_verdicts

    marked = {(f.key[0].rpartition(".")[2], f.attr, f.line): f.verdict.value
              for f in apply_verdicts(scan(package="vllm", specs=[]).findings,
                                      audit.verdicts())}
    assert marked[("MoERunner", "_combined_gate_weight", 353)] == "confirmed"
    assert marked[("FlashInferMLASparseImpl", "bmm1_scale", 519)] == "confirmed"
    assert marked[("PreparedMla", "weights", 153)] == "refuted"
    assert marked[("_GateLinearMethod", "_bf16x3_weight", 398)] == "confirmed"
    assert marked[("XPUMxFp8LinearKernel", "bmm_scale", 53)] == "confirmed"
    assert marked[("XPUFp8BlockScaledMMKernel", "bmm_scale", 256)] == "confirmed"
    assert marked[("Mxfp4OnlineMoEMethod", "w13_weight", 238)] == "not_runnable"
    assert marked[("FlashInferMLAImpl", "bmm1_scale", 374)] == "confirmed"
    assert marked[("TokenspeedMLAImpl", "softmax_scale", 316)] == "confirmed"
    assert marked[("DFlash2BeamModel", "_context_kv_weight", 389)] == "confirmed"
    assert marked[("K3DSparkModel", "_context_kv_norm_weights", 247)] == "confirmed"
    assert marked[("K3DSparkModel", "_context_kv_scales", 259)] == "not_runnable"
    assert marked[("MuseSparkModelOptNvFp4FusedMoE", "moe_quant_config", 711)] == "not_runnable"


def test_mla_impls_fill_their_scale_caches_in_a_decode_step_then_stop_at_a_gpu_workspace(audit):
    # the first decode step fills the host-float caches from the layer's KV scales, then
    # needs a CUDA workspace; the reload refreshes the scales, the caches keep the first load's
    for cls, attr in (("FlashInferMLAImpl", "bmm1_scale"), ("FlashInferMLAImpl", "bmm2_scale"),
                      ("TokenspeedMLAImpl", "softmax_scale")):
        row = _row(audit, cls, attr)
        assert (row.observed, row.verdict) == (Observed.STALE, Verdict.CONFIRMED), (cls, attr)
        assert row.paths == (f"layers.0.impl.{attr}", f"layers.1.impl.{attr}")
    mla = "vllm/v1/attention/backends/mla"
    for case, first, last in (
            ("mla-flashinfer", f"{mla}/flashinfer_mla.py:382 in forward_mqa",
             f"{mla}/flashinfer_mla.py:88 in _get_workspace_buffer"),
            ("mla-tokenspeed", f"{mla}/tokenspeed_mla.py:321 in forward_mqa",
             f"{mla}/tokenspeed_mla.py:57 in _get_workspace")):
        stop = audit.stops[case]
        assert (stop.exception, stop.first_vllm_frame, stop.last_vllm_frame) == (
            "RuntimeError", first, last), case
        assert "NVIDIA driver" in stop.message
        assert audit.cases[case] == "ran"


def test_the_drafter_models_run_through_vllms_load_and_reload_weights_muse_is_blocked(audit):
    # DFlash2 rebuilds its stacked K/V weight in load_weights: a new tensor on every reload
    for attr in ("_context_kv_weight", "_context_k_norm_weight"):
        row = _row(audit, "DFlash2BeamModel", attr)
        assert (row.observed, row.verdict) == (Observed.MOVED, Verdict.CONFIRMED), attr
        assert row.paths == (f"model.{attr}",)
    # K3 DSpark stacks the KV norms in the model-level post-load, which reload_weights never
    # reruns: the stack keeps the first load's values
    row = _row(audit, "K3DSparkModel", "_context_kv_norm_weights")
    assert (row.observed, row.verdict) == (Observed.STALE, Verdict.CONFIRMED)
    assert row.paths == ("model._context_kv_norm_weights",)
    # the KV-scale stack exists only with an fp8 KV cache, which CPU's MLA refuses (below)
    scales = _row(audit, "K3DSparkModel", "_context_kv_scales")
    assert (scales.observed, scales.verdict) == (Observed.ABSENT, Verdict.NOT_RUNNABLE)
    b = audit.blockers["muse-spark-nvfp4-moe"]
    # MuseSpark's Hopper Marlin post-load needs the Marlin repack, a CUDA op missing here
    assert (b.exception, b.first_vllm_frame, b.last_vllm_frame) == (
        "AttributeError",
        "vllm/models/muse_spark/nvidia/muse_moe_runner.py:608 in process_weights_after_loading",
        "vllm/_custom_ops.py:1111 in gptq_marlin_repack")
    assert "gptq_marlin_repack" in b.message


def test_the_k3_drafter_on_an_fp8_kv_cache_is_refused_by_cpus_mla():
    import dataclasses

    from vllm_integration.class_models import model_cases

    k3 = next(c for c in model_cases() if c.name == "kimi-k3-dspark-context-kv")
    with pytest.raises(NotRunnable) as info:
        dataclasses.replace(k3, cache_dtype="fp8").build(0)
    assert info.value.blocker.message == (
        "--kv-cache-dtype fp8 is not supported by MLA attention on CPU.")
    assert info.value.blocker.last_vllm_frame.startswith(
        "vllm/platforms/cpu.py:159 in get_attn_backend_cls")


def test_canary_a_forward_failing_before_its_declared_stop_is_a_blocker():
    from torch import nn

    from vllm_integration.case_base import VllmCase

    def forward(layer):  # fails in a vLLM function other than the declared stop
        from vllm.v1.attention.backends.mla import flashinfer_mla

        flashinfer_mla._get_workspace_buffer(False)

    planted = VllmCase("x", (), forward_stop="_get_multi_ctas_kv_counter_buffer",
                       first_forward=forward)
    with pytest.raises(RuntimeError):
        planted._forward(nn.Module())
    assert not planted.stops
    declared = VllmCase("x", (), forward_stop="_get_workspace_buffer", first_forward=forward)
    declared._forward(nn.Module())
    assert declared.stops["forward"].last_vllm_frame.endswith(" in _get_workspace_buffer")


def test_the_committed_table_matches_this_run_for_the_cases_run_here(audit):
    from types import SimpleNamespace

    from vllm_integration.class_cases import PLATFORM_ANSWERS
    from vllm_integration.class_table import build_table

    committed = [r for r in json.loads(TABLE.read_text())["classes"]
                 if r["case"] in RUNS + BLOCKED]
    assert {r["case"] for r in committed} == set(RUNS + BLOCKED) - {"fp8-linear"}
    classes = {r["class"]: [SimpleNamespace(file=r["file"], **f) for f in r["findings"]]
               for r in committed}
    fresh = build_table(classes, {r["class"]: r["case"] for r in committed},
                        json.loads(json.dumps(audit.as_json())), PLATFORM_ANSWERS)
    assert fresh == committed
