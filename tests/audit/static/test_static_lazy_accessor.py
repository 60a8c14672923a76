"""Evidence corrections evid31 (issue 21 item 1, thirteenth outside review): a lazy accessor's
cache lookup (``router_weight_ones = self.router_weight_ones`` in a method returning it) is
not the reader; the caller's use of the returned value handed to a call is
(:mod:`.lazy_accessor`; ``inc_wna16_moe.py:195`` -> ``:320``, ``muse_moe_runner.py:435`` ->
``:529``). The twin stays: a method that looks the value up but returns something else.

A getter that returns the attribute itself (``return self._stable_full_lm_head_weight``) is
followed the same way, to the caller that hands the getter's call straight to another call
(``gemma4_mtp.py:548`` -> ``:571``); a getter whose caller only tests the value stays.

Corpus: tests/fixtures/static_corpus_evidence/lazy31_cases.py and getter36_cases.py (``# reads:
ATTR`` the reader the audit must name, ``# old reader: ATTR`` the line it named before).
"""

from __future__ import annotations

from derivgraph.audit.static import lazy_accessor
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EvidenceCase
from tests.audit.static.expectations import site as _site

_CASE = EvidenceCase("lazy31_cases.py")
_GETTER = EvidenceCase("getter36_cases.py")
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


def test_a_getters_call_handed_to_a_call_is_the_reader():
    attrs = ("g36_full", "g36_checked")
    found = _GETTER.findings(attrs)
    assert _GETTER.reader_lines(attrs) == {a: _GETTER.marks("reads")[a] for a in attrs}
    assert "`return self.g36_full  # old reader: g36_full` (line" in found["g36_full"].evidence
    assert found["g36_full"].severity is Severity.ERROR


def test_canary_without_the_getter_rule_the_return_is_named(monkeypatch):
    monkeypatch.setattr(lazy_accessor, "_returns_read", lambda fn, line: False)
    got = _GETTER.reader_lines(("g36_full",))
    assert got["g36_full"] == _GETTER.marks("old reader")["g36_full"]


def test_canary_without_the_handed_call_the_return_is_named(monkeypatch):
    monkeypatch.setattr(lazy_accessor, "_handed_call", lambda value, names: None)
    got = _GETTER.reader_lines(("g36_full",))
    assert got["g36_full"] == _GETTER.marks("old reader")["g36_full"]


def test_a_getter_no_caller_consumes_ranks_after_a_read_elsewhere():
    attrs = ("g36_cfg", "g36_lone")
    assert _GETTER.reader_lines(attrs) == {a: _GETTER.marks("reads")[a] for a in attrs}


def test_canary_without_the_getter_rank_the_getter_is_named(monkeypatch):
    from derivgraph.audit.static.readers import ReaderIndex
    monkeypatch.setattr(ReaderIndex, "_bare_getter", lambda self, hit: False)
    got = _GETTER.reader_lines(("g36_cfg",))
    assert got["g36_cfg"] == _GETTER.marks("old reader")["g36_cfg"]


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


def test_vllm_getters_name_the_callers_call(vllm_report):
    # the fourteenth review's item 5 (Elastic-EP): the judge's line, not the getter
    f = _site(vllm_report, "fused_moe/fused_moe_modular_method.py", 98, "moe_quant_config")
    assert f.reader == ("forward vllm/model_executor/layers/fused_moe/eep_reconfigure.py:37 in "
                        "_make_eep_experts: \"quant_config\": quant_method.moe_quant_config,")
    f = _site(vllm_report, "models/gemma4_mtp.py", 560, "_stable_full_lm_head_weight")
    assert f.reader == ("forward vllm/model_executor/models/gemma4_mtp.py:571 in "
                        "Gemma4MTP.compute_logits: self._get_full_lm_head_weight(),")
    f = _site(vllm_report, "models/deepseek_v4/amd/mono_decode.py", 286, "_weights")
    assert f.reader == ("forward vllm/models/deepseek_v4/amd/mono_decode.py:403 in "
                        "MonoDecodeLayer.__call__: self.weights(layer),")
