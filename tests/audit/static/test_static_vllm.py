"""The static audit on the installed vLLM 0.33.0: known sites, recall on the grep probes, and
the recorded precision reviews (docs/audit-vllm-0.33.md).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from derivgraph.audit.static.scan import scan

# ---- the installed vLLM -------------------------------------------------------------------------

@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed")
def test_vllm_known_sites_are_found():
    report = scan(package="vllm", specs=[])
    sites = {(f.file.rsplit("vllm/", 1)[-1], f.attr, f.category) for f in report.findings}
    experts = "model_executor/layers/fused_moe/experts/"
    for site in [
        (experts + "cutlass_moe.py", "ab_strides1", "tensor-attr"),  # CUTLASS FP8 strides
        (experts + "cutlass_moe.py", "c_strides2", "alias"),  # ... and their alias
        (experts + "cutlass_moe.py", "s_strides1", "tensor-attr"),  # CUTLASS W4A8
        (experts + "trtllm_fp8_moe.py", "_g1_alphas", "tensor-attr"),
        (experts + "trtllm_nvfp4_moe.py", "g1_scale_c", "register"),
        (experts + "trtllm_nvfp4_moe.py", "g1_scale_c", "alias"),  # E keeps the temporary
        (experts + "flashinfer_cutlass_moe.py", "fake_input_scale", "tensor-attr"),
        (experts + "flashinfer_cutedsl_moe.py", "per_token_global_scale", "tensor-attr"),
        ("models/kimi_k3/nvidia/mla.py", "_q_scale_inv", "register"),
        ("model_executor/layers/quantization/kv_cache.py", "_k_scale_float", "host-scalar"),
    ]:
        assert site in sites, site
    assert not report.errors


# ---- precision and recall on vLLM 0.33.0 (docs/audit-vllm-0.33.md) ------------------------------

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
_NEED_VLLM = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vLLM is not installed")


@pytest.fixture(scope="module")
def vllm_report():
    return scan(package="vllm")


_EVIDENCE_RULES = ("no reader after load", "applied once per load",
                   "a reference to the kept parameter", "stored on ",
                   # the outside review's readings (docs/audit-static-outside-review.md): CPU-only
                   # paths capture no device graph; a source the same step deletes cannot go stale
                   "runs only on the CPU platform", "made once from ")
"""Evidence that lowers a site to info (derivgraph.audit.static.evidence)."""


def _demoted(report, s) -> bool:
    """Whether a reviewed site is now info because the evidence rules found no reader, a fold
    applied once per load, or a reference the reload refills."""
    near = _near(report, s["file"], s["line"], s["attr"], slack=0)
    return bool(near) and all(f.severity.value == "info" and f.evidence.startswith(
        _EVIDENCE_RULES) for f in near)


_OUTSIDE_RULES = ("runs only on the CPU platform", "made once from ")


def _demoted_by_outside_reading(report, s) -> bool:
    """Whether a reviewed site is info by one of the outside review's readings (CPU-only paths,
    a deleted source): sites the project's own reviews had judged TP."""
    near = _near(report, s["file"], s["line"], s["attr"], slack=0)
    return bool(near) and all(f.severity.value == "info" and f.evidence.startswith(
        _OUTSIDE_RULES) for f in near)


def _acted_on_or_demoted(report, s) -> bool:
    return any(f.severity.value in ("error", "warning")
               for f in _near(report, s["file"], s["line"], s["attr"], slack=0)) or \
        _demoted(report, s)


def _near(report, file: str, line: int, attr: str, slack: int = 3):
    return [f for f in report.findings if f.file == file and f.attr == attr
            and abs(f.line - line) <= slack]


@pytest.mark.vllm
@pytest.mark.slow
@_NEED_VLLM
def test_vllm_recall_on_the_grep_probes(vllm_report):
    probes = json.loads((RESOURCES / "static_probes_vllm_0.33.json").read_text())["probes"]
    assert len(probes) >= 30
    missed = [p for p in probes if not _near(vllm_report, p["file"], p["line"], p["attr"])]
    recall = 1 - len(missed) / len(probes)
    # docs/audit-vllm-0.33.md reports this number; the target is 90 %
    assert recall >= 0.9, f"recall {recall:.0%}; missed: " + ", ".join(
        f"{p['file']}:{p['line']} {p['attr']}" for p in missed)


@pytest.mark.vllm
@pytest.mark.slow
@_NEED_VLLM
def test_vllm_reviewed_sample_is_still_reported_and_precision_is_recorded(vllm_report):
    review = json.loads((RESOURCES / "static_review_vllm_0.33.json").read_text())
    sample = review["sample"]
    assert len(sample) >= 40 and review["seed"] == 3011
    assert all(s["judgement"] in ("TP", "FP") and s["why"] for s in sample)
    tp = sum(s["judgement"] == "TP" for s in sample)
    assert review["summary"] == {"tp": tp, "fp": len(sample) - tp,
                                 "precision": round(tp / len(sample), 3)}
    # every reviewed site is still an error/warning finding at its file:line, so the
    # judgements describe what the audit prints (a spec added since may declare the site: the
    # spec library grows; e.g. the DeepSeek-V4 compressor fusion, judged FP for its reason)
    # (the evidence rules lowered to info exactly the sites whose reader or second run the
    # outside review could not find: b12x quant-config fields, folds applied once per load)
    for s in sample:
        assert _acted_on_or_demoted(vllm_report, s), f"{s['file']}:{s['line']} {s['attr']}"
    # 14 judged TP under the old criterion (6 b12x config fields, 8 folds) and the throwaway
    # `ark_linear.scales` FP; the DeepSeek-V4 ROCm scale copied for one dtype is a warning again
    # (rules22: the zentorch `layers/utils.py:599` closure, judged TP, is an error again: the
    # embedding's method keeps the weight its step empties only on request)
    assert sum(_demoted(vllm_report, s) for s in sample) == 15 + 6
    assert sum(_demoted_by_outside_reading(vllm_report, s) for s in sample) == 6
    assert review["summary"]["precision"] >= 0.8


@pytest.mark.vllm
@pytest.mark.slow
@_NEED_VLLM
def test_vllm_rules_clear_every_false_positive_of_the_seed_2611_review(vllm_report):
    # the seed-2611 review's 9 false positives guided the rules of review_fixes.py: each is now
    # info (or no site), and none of its 31 true positives was made info (a spec added since
    # may declare one: still an error, declared)
    review = json.loads((RESOURCES / "static_review_vllm_0.33_v2.json").read_text())
    assert review["seed"] == 2611 and review["summary"] == {"tp": 31, "fp": 9, "precision": 0.775}

    def acted_on(s):
        return any(f.severity.value in ("error", "warning")
                   for f in _near(vllm_report, s["file"], s["line"], s["attr"], slack=0))

    tps = [s for s in review["sample"] if s["judgement"] == "TP"]
    assert all(_acted_on_or_demoted(vllm_report, s) for s in tps)
    # (rules23: `layers/utils.py:577`, a TP, is an error again: its branch returns before the
    # step's emptying, so the packed weight stays a full parameter and the unpacked copy goes
    # stale)
    assert sum(_demoted(vllm_report, s) for s in tps) == 4 + 7
    assert sum(_demoted_by_outside_reading(vllm_report, s) for s in tps) == 7
    assert [s["line"] for s in review["sample"] if s["judgement"] == "FP" and acted_on(s)] == []


@pytest.mark.vllm
@pytest.mark.slow
@_NEED_VLLM
def test_vllm_refinements_keep_every_true_positive_of_the_first_review(vllm_report):
    # the seed-933 review guided the issue-9p refinements: none of its 28 true positives may
    # have been turned into info or dropped, and its view / initial-load / weight-free false
    # positives are info now
    review = json.loads((RESOURCES / "static_review_vllm_0.33_v1.json").read_text())
    assert review["seed"] == 933 and review["summary"]["tp"] == 28

    def acted_on(s):  # reported, or declared by a spec (the library grows)
        return any(f.declared or f.severity.value in ("error", "warning")
                   for f in _near(vllm_report, s["file"], s["line"], s["attr"], slack=0))

    tps = [s for s in review["sample"] if s["judgement"] == "TP"]
    assert all(acted_on(s) or _demoted(vllm_report, s) for s in tps)
    # 6 are info by the outside review's readings (the two zentorch sites, whose step returns
    # early on its own flag, were warnings again for a while; issue 21: that step also empties
    # its source parameters, so both reload paths raise, the published CPU reading); the
    # DeepSeek-V4 ROCm scale copied for one dtype by the model-level step is a warning again
    # (rules22: `layers/utils.py:599`, a TP, is an error again: the embedding keeps its weight)
    assert sum(_demoted(vllm_report, s) for s in tps) == 8 + 6
    assert sum(_demoted_by_outside_reading(vllm_report, s) for s in tps) == 6
    cleared = {(s["file"].rsplit("/", 1)[-1], s["line"]) for s in review["sample"]
               if s["judgement"] == "FP" and not acted_on(s)}
    assert {("deepep_ll.py", 110), ("rocm.py", 1185), ("rocm.py", 1193),
            ("trtllm_nvfp4_moe.py", 126), ("trtllm_nvfp4_moe.py", 127)} <= cleared
    # that review's FP at xpu.py:263 ("at most a reference hazard") is reported as exactly that
    # now: a view a layer kernel's rerunning step makes of the reload temporary (the fourth
    # outside review judged it real)
    (view,) = _near(vllm_report, "vllm/model_executor/kernels/linear/scaled_mm/xpu.py", 263,
                    "bmm_weight", slack=0)
    assert (view.severity.value, view.store) == ("warning", "reference")


@pytest.mark.vllm
@pytest.mark.slow
@_NEED_VLLM
def test_vllm_views_of_reload_temporaries_and_refilled_copies(vllm_report):
    """The fourth and third outside reviews' misses of these classes, found as their class
    (``view_copy_cases.py``): the XPU grouped view of the weight a layer kernel's step makes,
    and the fp32 sinks copies attention impls refill only in post-load code."""
    def one(file: str, line: int, attr: str):
        (f,) = _near(vllm_report, file, line, attr, slack=0)
        return f.severity.value, f.store

    assert one("vllm/model_executor/kernels/linear/scaled_mm/xpu.py", 263,
               "bmm_weight") == ("warning", "reference")
    assert one("vllm/v1/attention/backends/b12x.py", 852, "sinks") == ("warning",
                                                                      "refilled-copy")
    assert one("vllm/v1/attention/backends/flashinfer.py", 2151,
               "sinks") == ("warning", "refilled-copy")
    refilled = sorted((f.file.rsplit("/", 1)[-1], f.line) for f in vllm_report.findings
                      if f.store == "refilled-copy")
    # the DeepSeek-V4 hyper-connection broadcast (made once, refilled with copy_), reached
    # since rules24 follows ``self.model.finalize_mhc_broadcast_weights()``
    assert refilled == [("b12x.py", 852), ("flashinfer.py", 2151), ("model.py", 306),
                        ("model.py", 1190), ("model.py", 1221), ("model.py", 1496)]
