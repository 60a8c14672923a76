"""Evidence correction evid30 (issue 21 item 1): an experts class whose backend the selector's
own compatibility test rejects for the storing class's config class is not a reader candidate
(:mod:`.rejected`; vLLM's ``MoeWNA16Method``: Marlin, batched Marlin and emulation never serve
``MoeWNA16Config``, so Triton reads its config).

Corpus: tests/fixtures/static_corpus_evidence/reject_cases.py with reject_select.py (the
selector and its test) and order_cases.py (evid28's classes). The canary plants the old
behaviour back (no rejection) and sees the selector's first backend again.
"""

from __future__ import annotations

import ast

from derivgraph.audit.static import selection
from derivgraph.audit.static.rejected import _rejections
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase, readers_at
from tests.audit.static.expectations import site as _site

_ORDER = EvidenceCase("order_cases.py")
_FILES = [EVIDENCE_CORPUS / name for name in
          ("reject_cases.py", "order_cases.py", "reject_select.py", "reject_run.py")]
# the selector's first backend's call, and the slow backend's (evid28's classes)
_FAST, _SLOW = (("order_cases.py", _ORDER.line(call))
                for call in ("ops.ord_fast_mono(", "ops.ord_slow_moe("))
_ATTRS = ("rej_layout_config", "rej_plain_config")


def _readers() -> dict[str, tuple[str, int] | None]:
    return readers_at(_FILES, _ATTRS, Severity.WARNING)  # evidence only


def test_the_selectors_test_is_read_per_config_class():
    text = (EVIDENCE_CORPUS / "reject_select.py").read_text()
    assert _rejections(ast.parse(text)) == {
        ("quant_config", "RejLayoutConfig"): frozenset({"FAST"})}


def test_a_backend_rejected_for_the_config_class_does_not_read_it():
    got = _readers()
    assert got["rej_layout_config"] == _SLOW
    assert got["rej_plain_config"] == _FAST  # a config class the test lets through


def test_canary_without_the_rejection_the_selectors_first_backend_is_named(monkeypatch):
    monkeypatch.setattr(selection, "rejected_classes", lambda *args: frozenset())
    assert _readers() == dict.fromkeys(_ATTRS, _FAST)


# ---- the vLLM site (vLLM 0.33.0) --------------------------------------------------------------

def test_vllm_moe_wna16_config_is_read_by_triton_not_marlin(vllm_report):
    f = _site(vllm_report, "quantization/moe_wna16.py", 415, "moe_quant_config")
    assert f.reader == ("kernel-call vllm/model_executor/layers/fused_moe/experts/triton_moe.py:"
                        "790 in TritonWNA16Experts.apply: self.w1_scale,")
    # compressed-tensors WNA16 (QuantizationArgs) is not rejected: Marlin still serves it
    g = _site(vllm_report, "compressed_tensors_moe/compressed_tensors_moe_wna16.py", 363,
              "moe_quant_config")
    assert "marlin_moe.py:770" in (g.reader or "")
