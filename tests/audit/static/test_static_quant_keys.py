"""Evidence correction readers31 (issue 21 item 1, item 22 of the thirteenth outside review): a
selector module that maps each backend to the activation key it runs with tries the backends
running with the key the storing class asks for first, so only their classes are reader
candidates (:mod:`.quant_keys`, applied in :func:`.selection.serving_classes`; vLLM's online
MXFP4 asks ``kMxfp4Dynamic``: ``CutlassExpertsMxfp4`` reads its config, not
``FlashInferExperts``). A class that asks no key, or a key that differs by call, keeps the
selector's order.

Corpus: tests/fixtures/static_corpus_evidence/keys31_cases.py with keys31_select.py (the
selector and its key map) and order_cases.py (the experts classes). The canary plants the old
behaviour back (no key filter) and sees the fast backend again.
"""

from __future__ import annotations

from derivgraph.audit.static import quant_keys, selection
from derivgraph.audit.static.backend_branches import bound_selectors
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase, readers_at
from tests.audit.static.expectations import site as _site

_ORDER = EvidenceCase("order_cases.py")
_FILES = [EVIDENCE_CORPUS / name for name in
          ("keys31_cases.py", "keys31_select.py", "order_cases.py")]
_FAST, _SLOW = (("order_cases.py", _ORDER.line(call))
                for call in ("ops.ord_fast_mono(", "ops.ord_slow_moe("))
_ATTRS = ("k31_asked_config", "k31_plain_config", "k31_scheme_config")


def _readers() -> dict[str, tuple[str, int] | None]:
    return readers_at(_FILES, _ATTRS, Severity.WARNING)  # evidence only


def _index() -> ReaderIndex:
    files = [(p.name, p.read_text()) for p in _FILES]
    return ReaderIndex(files, (), lambda c: frozenset())


def test_the_key_map_and_the_asked_key_are_read_from_source():
    index = _index()
    texts = dict(index.files)
    select, cases = texts["keys31_select.py"], texts["keys31_cases.py"]
    assert quant_keys.backend_keys(index, select) == {"SLOW": "kK31Dynamic"}
    asked, plain, scheme = (bound_selectors(index, cases, c) for c in (
        "K31AskedMethod", "K31PlainMethod", "K31SchemeMethod"))
    assert [b.module for b in asked] == [select]
    assert quant_keys.requested_keys(index, cases, "K31AskedMethod", asked) == {
        "activation_key": "kK31Dynamic"}
    assert quant_keys.requested_keys(index, cases, "K31PlainMethod", plain) == {}
    # differs by call
    assert quant_keys.requested_keys(index, cases, "K31SchemeMethod", scheme) == {}
    assert quant_keys.keyed_out(index, cases, "K31AskedMethod", asked, frozenset(
        {"OrdFastMonolithic", "OrdSlowExperts"})) == {"OrdFastMonolithic"}


def test_the_backend_running_with_the_asked_key_reads_the_config():
    got = _readers()
    assert got["k31_asked_config"] == _SLOW
    assert got["k31_plain_config"] == _FAST  # no key asked: the selector's first backend
    assert got["k31_scheme_config"] == _FAST  # the key depends on the config


def test_canary_without_the_key_filter_the_first_backend_is_named(monkeypatch):
    monkeypatch.setattr(selection, "keyed_out", lambda *args: frozenset())
    assert _readers() == dict.fromkeys(_ATTRS, _FAST)


# ---- the vLLM site (vLLM 0.33.0) --------------------------------------------------------------

def test_vllm_online_mxfp4_config_is_read_by_the_cutlass_mxfp4_experts(vllm_report):
    f = _site(vllm_report, "quantization/online/mxfp4.py", 253, "moe_quant_config")
    assert f.severity is Severity.WARNING
    assert f.reader == ("kernel-call vllm/model_executor/layers/fused_moe/experts/"
                        "cutlass_moe.py:1122 in CutlassExpertsMxfp4.apply: "
                        "w1_blockscale=self.w1_scale,")
