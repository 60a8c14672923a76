"""Evidence corrections evid26 (issue 21 item 1): the consumer of a config is the experts class
its storing class selects, the one built for the config's default construction; equal fits
leave it not resolved (the accessor, said so); a class named beside the handed config is its
consumer; a helper's ``getattr`` lookup is followed to its caller's call.

Corpus: tests/fixtures/static_corpus_evidence/selection_cases.py (+ selection_select.py, the
selector; selection_build.py, the building module that imports a class never selected).
``# reads: ATTR`` marks the reader the audit must name, ``# old reader: ATTR`` the line it named
before (the canaries plant the old behaviour back and see it named again).
"""

from __future__ import annotations

import re

import pytest

from derivgraph.audit.static import evidence, readers, selection
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase
from tests.audit.static.expectations import site as _site

_CASE = EvidenceCase("selection_cases.py")
_FILES = [_CASE.path, EVIDENCE_CORPUS / "selection_select.py",
          EVIDENCE_CORPUS / "selection_build.py"]
_MARK = re.compile(r"# (reads|old reader): (\w+)")
_SEVERITY = {"sel_config": Severity.WARNING, "sel_tie_config": Severity.WARNING,
             "sel_named_config": Severity.WARNING, "_sel_unpacked": Severity.ERROR}


def _marks(kind: str) -> dict[str, int]:
    return {m.group(2): n for n, line in enumerate(_CASE.path.read_text().splitlines(), 1)
            for m in _MARK.finditer(line) if m.group(1) == kind}


def _findings():
    out = {}
    for f in scan(_FILES, specs=[], jobs=1).findings:
        if f.attr in _SEVERITY:
            assert f.severity is _SEVERITY[f.attr], f.attr  # evidence only: no severity moves
            out[f.attr] = f
    return out


def _lines(found) -> dict[str, int | None]:
    out = {}
    for attr, f in found.items():
        m = re.search(r"selection_cases\.py:(\d+) in ", f.reader or "")
        out[attr] = int(m.group(1)) if m else None
    return out


def test_the_selected_default_consumer_is_named_and_the_old_reader_refused():
    found = _findings()
    got, reads = _lines(found), _marks("reads")
    assert got == {a: reads[a] for a in _SEVERITY}
    old = _marks("old reader")
    assert got["sel_config"] != old["sel_config"]
    assert got["_sel_unpacked"] != old["_sel_unpacked"]
    assert found["_sel_unpacked"].reader_kind == "kernel-call"
    # equal fits: the accessor, and the evidence says the consumer is not resolved
    assert "consumer not resolved: 2 experts classes" in found["sel_tie_config"].evidence
    assert "SelFullExperts, SelNarrowExperts" in found["sel_tie_config"].evidence
    assert "not resolved" not in found["sel_config"].evidence


def test_canary_without_the_warm_up_ranking_the_consumers_compile_step_is_named(monkeypatch):
    monkeypatch.setattr(readers, "_warm_up", lambda hit: False)
    got = _lines(_findings())
    assert got["sel_config"] == _marks("old reader")["sel_warm"]


def test_canary_without_the_selector_the_building_modules_class_is_named(monkeypatch):
    """The MXFP8 case: the building module imports a class the storing class never selects."""
    monkeypatch.setattr(selection, "selected_classes", lambda *args: frozenset())
    got = _lines(_findings())
    assert got["sel_config"] == _marks("old reader")["sel_config"]


def test_canary_without_the_default_construction_the_consumer_is_not_resolved(monkeypatch):
    """Without the fields of the default construction the full and the narrow consumer fit
    equally: no kernel is guessed (before evid26 the narrow one, the larger family, was)."""
    monkeypatch.setattr(ReaderIndex, "coverage", lambda self, cls, holder, default: 0)
    found = _findings()
    assert _lines(found)["sel_config"] == _marks("reads")["sel_tie_config"]  # the accessor
    assert "consumer not resolved" in found["sel_config"].evidence


def test_canary_without_the_unresolved_rule_family_size_picks_the_narrow_consumer(monkeypatch):
    """Planted: equal fits ranked by family size again (the evid25 rule): the narrow consumer
    (two subclasses) is named for the config no construction field tells apart."""
    monkeypatch.setattr(ReaderIndex, "coverage",
                        lambda self, cls, holder, default: len(self.family(cls)))
    got = _lines(_findings())
    assert got["sel_tie_config"] == _marks("reads")["sel_named_config"]  # SelNarrowExperts


def test_canary_without_the_class_named_beside_the_selected_default_is_named(monkeypatch):
    monkeypatch.setattr(selection, "_named_beside", lambda body, attr: frozenset())
    got = _lines(_findings())
    assert got["sel_named_config"] == _marks("reads")["sel_config"]  # SelFullExperts


def test_canary_without_following_the_lookup_the_getattr_is_named(monkeypatch):
    monkeypatch.setattr(evidence, "returned_lookup", lambda index, reader: reader)
    got = _lines(_findings())
    assert got["_sel_unpacked"] == _marks("old reader")["_sel_unpacked"]


def test_default_fields_are_the_fall_through_return_and_foreign_the_other_branches():
    text = "\n".join(p.read_text() for p in _FILES[2:])
    index = ReaderIndex([("selection_build.py", text)], (), lambda c: frozenset({c}))
    got = selection.default_fields(index, "make_sel_config", text)
    assert got == selection.Construction(frozenset({"w1_scale", "a1_gscale", "g1_alphas"}),
                                         frozenset())
    branchy = ("def make(backend, a, b):\n    if backend:\n        return C(w=a, zp=b)\n"
               "    else:\n        return C(w=a, gs=b)\n")
    got = selection.default_fields(index, "make", branchy)
    assert got == selection.Construction(frozenset({"w", "gs"}), frozenset({"zp"}))
    assert selection.default_fields(index, "", text) == selection.NO_CONSTRUCTION


def test_default_fields_of_elif_chains_nested_else_and_quoted_returns():
    """An ``elif`` chain's final ``else`` is the fall-through; an ``if`` nested in an ``else``
    is not an ``elif``; a comment or a string holding ``return f(x=...)`` is no return."""
    index = ReaderIndex([], (), lambda c: frozenset({c}))
    chain = ("def make(k, a, b):\n    if k == 1:\n        return C(w=a, zp=b)\n"
             "    elif k == 2:\n        return C(w=a, s=b)\n"
             "    else:\n        return C(w=a, gs=b)  # return C(bad=a)\n")
    assert selection.default_fields(index, "make", chain) == selection.Construction(
        frozenset({"w", "gs"}), frozenset({"zp", "s"}))
    nested = ("def make(k, a, b):\n    if k == 1:\n        return C(w=a, zp=b)\n"
              "    else:\n        if k == 2:\n            return C(w=a, s=b)\n"
              "        return C(w=a, gs=b)\n")
    assert selection.default_fields(index, "make", nested) == selection.Construction(
        frozenset({"w", "gs"}), frozenset({"zp", "s"}))
    quoted = ('def make(a):\n    """return C(doc=a)"""\n    # return C(note=a)\n'
              "    return C(w=a)\n")
    assert selection.default_fields(index, "make", quoted) == selection.Construction(
        frozenset({"w"}), frozenset())
    private = "def make(w1_scale, g):\n    return C(_w1=D(g, w1_scale), _a1=D(g))\n"
    assert selection.default_fields(index, "make", private).filled == frozenset({
        "w1_scale", "g"})


# ---- the vLLM sites (vLLM 0.33.0) ---------------------------------------------------------

_EXPERTS = "vllm/model_executor/layers/fused_moe/experts/"


@pytest.mark.parametrize(("suffix", "line"), [
    ("compressed_tensors_moe_w8a8_mxfp8.py", 134), ("online/mxfp8.py", 198),
    ("inc/schemes/inc_mxfp8_moe.py", 149), ("quantization/modelopt.py", 1480),
    ("quark/quark_moe.py", 2112)])
def test_vllm_mxfp8_configs_name_the_deepgemm_experts_not_triton(vllm_report, suffix, line):
    f = _site(vllm_report, suffix, line, "moe_quant_config")
    assert f.severity is Severity.WARNING
    assert f.reader == (f"kernel-call {_EXPERTS}deep_gemm_moe.py:407 in DeepGemmExperts.apply: "
                        "(w1, self.w1_scale),")


@pytest.mark.parametrize(("suffix", "line"), [
    ("compressed_tensors_moe_w4a4_nvfp4.py", 268), ("quantization/modelopt.py", 1106),
    ("online/nvfp4.py", 191), ("quark/quark_moe.py", 2385)])
def test_vllm_nvfp4_configs_name_the_flashinfer_cutlass_experts_not_marlin(vllm_report, suffix,
                                                                           line):
    f = _site(vllm_report, suffix, line, "moe_quant_config")
    assert f.severity is Severity.WARNING
    # a line of the ``quant_scales`` list ``flashinfer_cutlass_fused_moe(`` takes: a kernel
    # call (evid27; ``forward`` before)
    assert f.reader.startswith(f"kernel-call {_EXPERTS}flashinfer_cutlass_moe.py:310 in "
                               "FlashInferExperts.apply: self.w2_scale.view(")


def test_vllm_muse_spark_config_names_the_class_handed_beside_it(vllm_report):
    f = _site(vllm_report, "muse_spark/nvidia/muse_moe_runner.py", 711, "moe_quant_config")
    assert f.reader.startswith(f"kernel-call {_EXPERTS}marlin_moe.py:774 in MarlinExperts")


@pytest.mark.parametrize(("suffix", "line", "attr"), [
    ("quantization/mxfp4.py", 371, "w13_precision_config"),
    ("quark/quark_moe.py", 1870, "moe_quant_config")])
def test_vllm_equal_fits_keep_the_accessor_and_say_so(vllm_report, suffix, line, attr):
    """Equal fits no selector order ranks (evid28 ranks the others, test_static_backend_order;
    mxfp4.py:371 is filled only under a backend test, where the overall order says nothing).
    GPTQ ``auto_gptq.py:693`` left this list in evid29: its builder's fall-through fills private
    descriptors, now read through the parameters they hold (test_static_bound_classes)."""
    f = _site(vllm_report, suffix, line, attr)
    assert f.reader.startswith("forward vllm/model_executor/layers/fused_moe/modular_kernel.py")
    assert "consumer not resolved" in f.evidence


def test_vllm_fp8_configs_keep_the_triton_experts(vllm_report):
    """FlashInfer CUTLASS reads the most fields, but also those only the FP8 builder's
    FlashInfer branch fills (``g1_alphas``...): the Triton experts fit the default."""
    f = _site(vllm_report, "quantization/fp8.py", 702, "moe_quant_config")
    assert f.reader.startswith(f"kernel-call {_EXPERTS}triton_moe.py:442 in TritonExperts")


def test_vllm_gdn_conv_copy_names_the_conv_call_not_the_getattr(vllm_report):
    f = _site(vllm_report, "model_executor/layers/utils.py", 577, "_cpu_unpacked_conv_weight")
    assert f.reader == ("kernel-call vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py:568"
                        " in _spec_forward: out = F.conv1d(conv_in, w, bias, groups=dim)[0]  "
                        "# (dim, q_i)")
