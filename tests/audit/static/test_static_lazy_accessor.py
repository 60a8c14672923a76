"""Evidence corrections evid31 (issue 21 item 1, thirteenth outside review): a lazy accessor's
cache lookup (``router_weight_ones = self.router_weight_ones`` in a method returning it) is
not the reader; the caller's use of the returned value handed to a call is
(:mod:`.lazy_accessor`; ``inc_wna16_moe.py:195`` -> ``:320``, ``muse_moe_runner.py:435`` ->
``:529``). The twin stays: a method that looks the value up but returns something else.

Corpus: tests/fixtures/static_corpus_evidence/lazy31_cases.py (``# reads: ATTR`` the reader the
audit must name, ``# old reader: ATTR`` the line it named before).
"""

from __future__ import annotations

from derivgraph.audit.static import lazy_accessor
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EvidenceCase
from tests.audit.static.expectations import site as _site

_CASE = EvidenceCase("lazy31_cases.py")
_ATTRS = ("l31_packed", "l31_ones", "l31_plain")


def test_the_callers_use_of_the_returned_value_is_named():
    found = _CASE.findings(_ATTRS)
    got, reads, old = _CASE.reader_lines(_ATTRS), _CASE.marks("reads"), _CASE.marks("old reader")
    assert got == {a: reads[a] for a in _ATTRS}
    assert got["l31_packed"] != old["l31_packed"] and got["l31_ones"] != old["l31_ones"]
    assert found["l31_packed"].reader_kind == "kernel-call"
    assert found["l31_ones"].reader.endswith("L31LazyExperts.apply: "
                                             "return ops.l31_gather(y, weights)  # reads: "
                                             "l31_ones")
    # the chain: the lookup, the tuple returned, the call through the bound attribute
    assert "`ones = self.l31_ones  # old reader: l31_ones` (line" in found["l31_ones"].evidence
    assert "`return x * 2, self._l31_get_ones(rows)` (line" in found["l31_ones"].evidence
    assert "`x, weights = self.l31_scale_fn(x, rows)` (line" in found["l31_ones"].evidence


def test_canary_without_the_rule_the_lookup_is_named(monkeypatch):
    monkeypatch.setattr(lazy_accessor, "returned_consumer", lambda *args: None)
    old = _CASE.marks("old reader")
    got = _CASE.reader_lines(_ATTRS)
    assert got["l31_packed"] == old["l31_packed"] and got["l31_ones"] == old["l31_ones"]


def test_canary_without_the_tuple_position_the_tuple_caller_is_lost(monkeypatch):
    monkeypatch.setattr(lazy_accessor, "_position", lambda value, names: None)
    got = _CASE.reader_lines(_ATTRS)
    assert got["l31_ones"] == _CASE.marks("old reader")["l31_ones"]
    assert got["l31_packed"] == _CASE.marks("reads")["l31_packed"]


# ---- the vLLM sites the thirteenth review's judges named (vLLM 0.33.0) ------------------------

def test_vllm_lazy_accessors_name_the_callers_use(vllm_report):
    f = _site(vllm_report, "quantization/inc/schemes/inc_wna16_moe.py", 208,
              "router_weight_ones")
    assert f.reader == ("forward vllm/model_executor/layers/quantization/inc/schemes/"
                        "inc_wna16_moe.py:320 in INCARKWNA16MoEMethod.apply: gather_topk_weights,")
    f = _site(vllm_report, "models/muse_spark/amd/muse_moe_runner.py", 429, "_unit_weights_bufs")
    assert f.reader == ("kernel-call vllm/models/muse_spark/amd/muse_moe_runner.py:529 in "
                        "MuseSparkAiterExperts.apply: topk_weights=unit_topk_weights,")
    assert f.severity is Severity.WARNING
