"""Evidence corrections evid29 (issue 21 item 1): readers the audit named wrong after evid28.

* A class that binds its experts class itself, outside its selector (a direct class on its
  fall-through path, a backend it fixes under a flag its storing method is called under), is
  served by that class (:mod:`.bound_classes`), not by the selector's first backend; where the
  binding is not followed, the accessor stays with "consumer not resolved".
* A config whose building function's fall-through fills private descriptors (``_w1=Desc(...,
  w1_scale)``) is ranked by the parameters those are made of (:func:`.selection.default_fields`).
* A bound class that hands its whole config to a free function is read where that function
  reads the field, on the path a config without a special flag takes
  (:func:`.handed_reader.config_field_read`); a function that reads only other fields gives no
  reader (the accessor stays).
* A layer parameter the reload's skip set keeps live, rebound by a kernel class, is read where
  that class hands its own ``bias`` parameter on (:meth:`.readers.ReaderIndex.parameter_read`).

Corpus: tests/fixtures/static_corpus_evidence/bound_cases.py (with bound_run.py, order_cases.py and
order_select.py, evid28's selector) and skip_reader_cases.py. ``# reads: ATTR`` marks the reader
the audit must name; the canaries plant the old behaviour back and see the old reader again.
"""

from __future__ import annotations

import re

import pytest

from derivgraph.audit.static import config_reader, evidence, selection
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase
from tests.audit.static.expectations import site as _site

_BOUND = EvidenceCase("bound_cases.py")
_ORDER = EvidenceCase("order_cases.py")
_SKIP = EvidenceCase("skip_reader_cases.py")
_FILES = [_BOUND.path, _ORDER.path, EVIDENCE_CORPUS / "order_select.py",
          EVIDENCE_CORPUS / "bound_run.py"]
_FAST = ("order_cases.py", _ORDER.line("ops.ord_fast_mono("))  # the selector's first backend
_ACCESSOR = ("order_cases.py", _ORDER.line("return self.quant_config.w1_scale"))
_SLOW = ("order_cases.py", _ORDER.line("ops.ord_slow_moe("))


def _readers(files, attrs) -> dict[str, tuple[tuple[str, int] | None, Severity, str]]:
    out = {}
    for f in scan(files, specs=[], jobs=1).findings:
        if f.attr in attrs:
            m = re.search(r"(\w+\.py):(\d+) in ", f.reader or "")
            out[f.attr] = ((m.group(1), int(m.group(2))) if m else None, f.severity, f.evidence)
    return out


_ATTRS = ("bnd_own_config", "bnd_slow_config", "bnd_default_config", "bnd_lost_config",
          "bnd_desc_config", "bnd_handed_config", "bnd_other_config")


def _bound() -> dict[str, tuple[tuple[str, int] | None, Severity, str]]:
    got = _readers(_FILES, _ATTRS)
    assert set(got) == set(_ATTRS)
    assert {a: got[a][1] for a in _ATTRS} == dict.fromkeys(_ATTRS, Severity.WARNING)
    return got


def test_a_class_bound_on_the_fall_through_path_serves_the_config():
    got = _bound()
    assert got["bnd_own_config"][0] == ("bound_cases.py", _BOUND.line("ops.bnd_own_moe("))
    assert "not resolved" not in got["bnd_own_config"][2]


def test_a_backend_fixed_under_the_methods_flag_serves_its_config_only():
    got = _bound()
    assert got["bnd_slow_config"][0] == _SLOW  # the fixed backend's class
    assert got["bnd_default_config"][0] == _FAST  # the default path: the selector's order


@pytest.mark.parametrize("attr", [
    "bnd_lost_config",  # a binding not followed
    "bnd_other_config",  # a config handed whole to a function that reads other fields only
])
def test_an_unread_bound_config_keeps_the_accessor_and_says_so(attr):
    reader, _, text = _bound()[attr]
    assert reader == _ACCESSOR
    assert "consumer not resolved" in text and "binds itself" in text


def test_canary_without_the_bound_classes_the_selectors_first_backend_is_named(monkeypatch):
    monkeypatch.setattr(selection, "bound_classes", lambda *args: None)
    got = _bound()
    assert {a: got[a][0] for a in _ATTRS} == dict.fromkeys(_ATTRS, _FAST)


def test_a_config_handed_whole_to_a_function_is_read_on_its_default_path():
    reader, _, text = _bound()["bnd_handed_config"]
    assert reader == ("bound_cases.py", _BOUND.line("# reads: bnd_handed_config"))
    assert "not resolved" not in text
    assert "handed on through bnd_handed_moe(quant_config=)" in text


def test_canary_without_the_handed_config_the_accessor_is_named(monkeypatch):
    monkeypatch.setattr(config_reader, "config_field_read", lambda *args: None)
    reader, _, text = _bound()["bnd_handed_config"]
    assert reader == _ACCESSOR
    assert "binds itself" in text


def test_canary_without_the_default_path_rule_the_flag_branch_is_named(monkeypatch):
    from derivgraph.audit.static import handed_reader
    monkeypatch.setattr(handed_reader, "_default_path", lambda index, file, param, reads: reads[0])
    reader, _, _ = _bound()["bnd_handed_config"]
    assert reader == ("bound_cases.py", _BOUND.line("fc1_scale=quant_config.w1_scale"))


def test_a_fall_through_of_private_descriptors_is_ranked_by_the_parameters_they_hold():
    reader, _, text = _bound()["bnd_desc_config"]
    assert reader == _FAST
    assert "not resolved" not in text


def test_canary_descriptor_keywords_as_fields_leave_every_class_equal(monkeypatch):
    monkeypatch.setattr(selection, "_parameters", lambda function: frozenset())
    reader, _, text = _bound()["bnd_desc_config"]
    assert reader == _ACCESSOR
    assert "consumer not resolved: 4 experts classes" in text


def test_a_skipped_bias_is_read_where_its_class_hands_the_bias_parameter_on():
    got = _readers([_SKIP.path], ("bias",))
    assert got["bias"][0] == ("skip_reader_cases.py", _SKIP.line("bias=bias)  # reads"))
    assert got["bias"][1] is Severity.WARNING


def test_canary_without_the_parameter_read_a_foreign_bias_read_is_named(monkeypatch):
    monkeypatch.setattr(evidence.ReaderIndex, "parameter_read", lambda *args: None)
    got = _readers([_SKIP.path], ("bias",))
    assert got["bias"][0] == ("skip_reader_cases.py", _SKIP.line("conv_bias=self.conv1d.bias)"))
    assert got["bias"][1] is Severity.WARNING  # evidence only: the severity does not move


# ---- the vLLM sites (vLLM 0.33.0) -------------------------------------------------------------

_Q = "vllm/model_executor/layers/quantization/"


@pytest.mark.parametrize("suffix,line,reader", [
    ("inc/schemes/inc_mxfp4_moe.py", 214,
     "kernel-call vllm/model_executor/layers/fused_moe/experts/marlin_moe.py:770 in "
     "MarlinExperts.apply.finalize_expert_output: w1_scale=self.w1_scale,"),
    ("quantization/auto_gptq.py", 693,
     "kernel-call vllm/model_executor/layers/fused_moe/experts/marlin_moe.py:770 in "
     "MarlinExperts.apply.finalize_expert_output: w1_scale=self.w1_scale,"),
    ("kernels/linear/mixed_precision/marlin.py", 177,
     "kernel-call vllm/model_executor/kernels/linear/mixed_precision/marlin.py:199 in "
     "MarlinLinearKernel.apply_weights: bias=bias,"),
])
def test_vllm_readers_bound_outside_the_selector(vllm_report, suffix, line, reader):
    f = _site(vllm_report, suffix, line, "bias" if line == 177 else "moe_quant_config")
    assert f.reader == reader


def test_vllm_gfx942_path_is_not_named_trtllm(vllm_report):
    f = _site(vllm_report, f"{_Q}mxfp4.py", 1004, "moe_quant_config")
    assert "trtllm" not in (f.reader or "")
    # the bound AiterMxfp4Experts hands its whole config to rocm_aiter_fused_experts, whose
    # default path reads the field (the thirteenth review's reader line, item 19)
    assert f.reader == ("kernel-call vllm/model_executor/layers/fused_moe/experts/"
                        "rocm_aiter_moe.py:452 in rocm_aiter_fused_experts: "
                        "w1_scale=quant_config.w1_scale,")
    # the default path of the same class keeps the selector's first backend
    g = _site(vllm_report, f"{_Q}mxfp4.py", 868, "moe_quant_config")
    assert "trtllm_mxfp4_moe.py:249" in (g.reader or "")
