"""A tensor a quant method keeps and hands to an object it builds (a builder's argument, then a
constructor's): the reader is that object's read after load (``handed_reader_cases.py``; on
vLLM 0.33.0 the W4A8 ``b_strides1``/``b_strides2`` the CUTLASS W4A8 experts read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from derivgraph.audit.static import handed_reader
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS as CORPUS
from tests.audit.static.expectations import planted_copy

NAME = "handed_reader_cases.py"


def _findings(path: Path) -> dict[str, object]:
    return {f.attr: f for f in scan([path], specs=[], jobs=1).findings}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_strides_handed_through_a_builder_to_experts_are_read_by_the_experts():
    path = CORPUS / NAME
    got = _findings(path)
    strides = got["b_strides_h"]
    assert strides.severity is Severity.WARNING  # read after load; shapes only, no weight
    line = _line_of(path, "# reads: b_strides_h")
    assert strides.reader.startswith(f"kernel-call {strides.file}:{line} in HandedExperts.apply: ")
    assert strides.evidence.endswith("handed on through make_handed_kernel(b_strides_h=) -> "
                                     "experts_cls(b_strides_h=) as HandedExperts")


def test_strides_kept_by_an_unread_object_or_an_unnamed_class_have_no_reader():
    got = _findings(CORPUS / NAME)
    for attr in ("plan_strides", "stray_strides"):
        assert got[attr].reader is None and got[attr].severity is Severity.INFO, attr


def test_canary_a_constructor_keeping_the_argument_under_an_unread_name_has_no_reader(tmp_path):
    """Keep the handed strides under a name ``apply`` does not read: the chain then ends at a
    store nothing reads after load, and the finding drops to info."""
    old = "        self.b_strides_h = b_strides_h  # expect: tensor-attr warning\n"
    path = planted_copy(CORPUS / NAME, tmp_path, old, "        self.unused_strides = b_strides_h\n")
    strides = _findings(path)["b_strides_h"]
    assert strides.reader is None and strides.severity is Severity.INFO


def test_canary_one_call_deep_does_not_reach_the_experts(monkeypatch):
    """The experts are two calls away (the builder, then ``experts_cls(...)``): with the
    search cut at one call the finding has no reader."""
    monkeypatch.setattr(handed_reader, "HANDOFF_DEPTH", 1)
    strides = _findings(CORPUS / NAME)["b_strides_h"]
    assert strides.reader is None and strides.severity is Severity.INFO


@pytest.fixture(scope="module")
def vllm_report():
    pytest.importorskip("vllm")
    return scan(package="vllm")


def test_vllm_w4a8_b_strides_are_read_by_the_cutlass_w4a8_experts(vllm_report):
    got = {f.attr: f for f in vllm_report.findings
           if f.file.endswith("compressed_tensors_moe_w4a8_fp8.py")}
    for attr, line in (("b_strides1", 162), ("b_strides2", 163)):
        f = got[attr]
        assert (f.line, f.declared, f.spec) == (line, True, "vllm-cutlass-w4a8-b-strides")
        assert " in CutlassExpertsW4A8Fp8.apply: " in f.reader
        # an argument line of ``run_cutlass_moe_w4a8_fp8(`` spanning lines: a kernel call (evid27)
        assert f.reader.startswith("kernel-call vllm/model_executor/layers/fused_moe/experts/"
                                   "cutlass_moe.py:")
        assert f.reader.endswith(f"self.{attr},")
        assert f"make_w4a8_moe_kernel({attr}=) -> experts_cls({attr}=) as " \
               "CutlassExpertsW4A8Fp8" in f.evidence
