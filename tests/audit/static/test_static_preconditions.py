"""Evidence correction evid31 (issue 21 item 1, item 22 of the thirteenth outside review): a
backend whose conversion path (a function the storing method calls, handing it the backend)
asserts or raises on an optional parameter the call never passes never finishes loading, so
its experts classes are not reader candidates (:mod:`.preconditions`; vLLM's online MXFP4
never loads on TRT-LLM: ``_cache_permute_indices`` is asserted and never passed).

Corpus: tests/fixtures/static_corpus_evidence/precond31_cases.py with precond31_convert.py (the
conversion), reject_select.py (the selector) and order_cases.py (the experts classes). The
canary plants the old behaviour back (no precondition) and sees the fast backend again.
"""

from __future__ import annotations

import ast

from derivgraph.audit.static import preconditions, selection
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase, readers_at
from tests.audit.static.expectations import site as _site

_ORDER = EvidenceCase("order_cases.py")
_FILES = [EVIDENCE_CORPUS / name for name in
          ("precond31_cases.py", "precond31_convert.py", "order_cases.py", "reject_select.py")]
_FAST, _SLOW = (("order_cases.py", _ORDER.line(call))
                for call in ("ops.ord_fast_mono(", "ops.ord_slow_moe("))
_ATTRS = ("pc31_unset_config", "pc31_passed_config")


def _readers() -> dict[str, tuple[str, int] | None]:
    return readers_at(_FILES, _ATTRS, Severity.WARNING)  # evidence only


def test_the_failing_branch_is_read_from_the_conversion():
    text = (EVIDENCE_CORPUS / "precond31_convert.py").read_text()
    tree = ast.parse(text)
    callee = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name == "convert_pc31")
    unset = ast.parse("convert_pc31(backend=b, w13_weight=w)", mode="eval").body
    passed = ast.parse("convert_pc31(backend=b, w13_weight=w, _cache_indices=c)",
                       mode="eval").body
    assert preconditions._failing(tree, callee, unset) == {"FAST"}
    assert preconditions._failing(tree, callee, passed) == set()


def test_a_backend_the_conversion_cannot_load_on_does_not_read_the_config():
    got = _readers()
    assert got["pc31_unset_config"] == _SLOW
    assert got["pc31_passed_config"] == _FAST  # the call passes the cache: the fast one serves


def test_canary_without_the_precondition_the_fast_backend_is_named(monkeypatch):
    monkeypatch.setattr(selection, "failing_backends", lambda *args: frozenset())
    assert _readers() == dict.fromkeys(_ATTRS, _FAST)


# ---- the vLLM site (vLLM 0.33.0) --------------------------------------------------------------

def test_vllm_online_mxfp4_config_is_not_read_by_trtllm(vllm_report):
    f = _site(vllm_report, "quantization/online/mxfp4.py", 253, "moe_quant_config")
    assert "trtllm" not in (f.reader or "")
    # readers31: the key filter names the class the outside judge named (test_static_quant_keys)
    assert f.reader == ("kernel-call vllm/model_executor/layers/fused_moe/experts/"
                        "cutlass_moe.py:1122 in CutlassExpertsMxfp4.apply: "
                        "w1_blockscale=self.w1_scale,")
