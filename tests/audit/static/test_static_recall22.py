"""Recall classes of issue 21 after the v9 measurement (``recall22_cases.py``): lazy per-layer
tables filled into local containers and stored by a tuple unpack, a stored lambda capturing a
handle an op call made from a weight, and a helper method returning a container of copies. Each
rule has a true positive, a false-positive twin and a canary that plants the bug back."""

from __future__ import annotations

import ast

from derivgraph.audit.static.platforms import kept_by_a_caller
from derivgraph.audit.static.returned_copies import refilled_in_place, returned_copies
from derivgraph.audit.static.semantics import Severity
from derivgraph.audit.static.vocab import annotation_holds_tensors
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase, findings_by_owner

_CASE = EvidenceCase("recall22_cases.py")
_CASES = _CASE.name
_line, _scan, _planted = _CASE.line, findings_by_owner, _CASE.planted


# ---- (a) lazy tables in local containers, stored by a tuple unpack ---------------------------

def test_lazy_tables_stored_by_a_tuple_unpack_are_errors_with_reader_and_weight():
    got = _scan(EVIDENCE_CORPUS / _CASES)
    build = f":{_line('ops.make_metadata(')} "
    for attr, weight in (("k_scale", "layer._k_scale_float"), ("v_scale", "layer._v_scale_float")):
        f = got[("ScaleTableMetadataBuilder", attr)]
        assert (f.category, f.severity) == ("lazy-cache", Severity.ERROR)
        assert f.derives_from == weight
        # the reader is the kernel call in build(), not the unpack that stores it
        assert f.reader.startswith("kernel-call ") and build in f.reader
    assert ("ScaleTableMetadataBuilder", "block_tables") not in got  # allocations only


def test_canary_tables_filled_from_a_scale_are_found_again_when_the_workspace_reads_one(tmp_path):
    got = _planted(tmp_path,
                   "            tables[name] = torch.zeros(layer.kv_cache.shape[0], "
                   "dtype=torch.int32)\n",
                   "            tables[name] = scale_table(layer.kv_cache.shape[0], "
                   "layer._k_scale_float)\n")
    assert got[("ScaleTableMetadataBuilder", "block_tables")].severity is Severity.ERROR


def test_canary_without_the_or_guard_the_tables_are_no_lazy_cache(tmp_path):
    got = _planted(tmp_path, "        if self.k_scale is not None or not "
                   "ops.is_fp8_kv_cache_enabled():\n            return\n", "")
    assert ("ScaleTableMetadataBuilder", "k_scale") not in got


def test_annotation_holds_tensors():
    def holds(text: str) -> bool:
        return annotation_holds_tensors(ast.parse(text, mode="eval").body)
    assert holds("dict[str, torch.Tensor]") and holds("list[torch.Tensor]")
    assert holds("Dict[int, Optional[Tensor]]")
    assert not holds("dict[str, int]") and not holds("torch.Tensor") and not holds("list[int]")


# ---- (b) a lambda capturing a handle an op call made from a weight ---------------------------

def test_lambda_over_a_weight_handle_is_an_error_and_a_workspace_handle_nothing():
    got = _scan(EVIDENCE_CORPUS / _CASES)
    f = got[("HandleLinearMethod", "run_gemm")]
    assert (f.category, f.severity) == ("captured-tensor", Severity.ERROR)
    assert "handle create_gemm_handle() made from weights" in f.reason
    assert f.derives_from == "layer.weight" and f.reader.startswith("captured ")
    assert ("HandleLinearMethod", "run_workspace") not in got  # a size, not the weight


def test_partial_over_a_weight_handle_is_an_error_and_a_size_handle_nothing():
    got = _scan(EVIDENCE_CORPUS / _CASES)
    f = got[("PartialHandleMethod", "run")]
    assert (f.category, f.severity) == ("captured-tensor", Severity.ERROR)
    assert f.derives_from == "layer.weight"
    assert ("PartialHandleMethod", "run_sizes") not in got  # made from .numel()


def test_canary_a_size_handle_made_from_the_weight_is_captured_again(tmp_path):
    got = _planted(tmp_path, "ops.create_gemm_workspace(layer.weight.numel())",
                   "ops.create_gemm_workspace(layer.weight)")
    assert got[("PartialHandleMethod", "run_sizes")].severity is Severity.ERROR


def test_canary_a_workspace_handle_made_from_the_weight_is_captured_again(tmp_path):
    got = _planted(tmp_path, "ops.create_gemm_workspace(layer.weight.shape[0] * 4)",
                   "ops.create_gemm_workspace(layer.weight)")
    assert got[("HandleLinearMethod", "run_workspace")].severity is Severity.ERROR


def test_cpu_handle_is_loud_when_a_caller_keeps_the_source_and_info_when_all_empty_it():
    got = _scan(EVIDENCE_CORPUS / _CASES)
    kept = got[(None, "cpu_gemm")]  # the embedding passes remove_weight=False
    assert kept.severity is Severity.ERROR and kept.derives_from == "layer.weight"
    removed = got[(None, "cpu_gemm_removed")]  # every caller passes remove_weight=True
    assert removed.severity is Severity.INFO
    assert "its step empties the parameter it reads" in removed.evidence


def test_canary_when_every_caller_empties_the_source_the_cpu_handle_is_info_again(tmp_path):
    got = _planted(tmp_path, "        dispatch_cpu_handle_gemm(layer, remove_weight=False)\n",
                   "        dispatch_cpu_handle_gemm(layer, remove_weight=True)\n")
    assert got[(None, "cpu_gemm")].severity is Severity.INFO


def test_kept_by_a_caller_on_text():
    body = ("def step(layer, remove: bool):\n    layer.f = make(layer.weight)\n"
            "    if remove:\n        layer.weight = P(torch.empty(0))\n")
    tree = {"a.py": "step(layer, remove=True)\n", "b.py": "x = 1\nstep(layer, remove=False)\n"}
    assert kept_by_a_caller(body, tree, 1) == "b.py:2"
    assert kept_by_a_caller(body, {"a.py": tree["a.py"]}, 1) is None  # every caller empties it
    unconditional = body.replace("    if remove:\n        layer.weight", "    layer.weight")
    assert kept_by_a_caller(unconditional, tree, 1) is None
    other_test = body.replace("if remove:", "if layer.big:")
    assert kept_by_a_caller(other_test, tree, 1) is None  # not a parameter of the step
    branch = body.replace("    layer.f = make(layer.weight)\n",
                          "    if conv:\n        layer.f = make(layer.weight)\n        return\n")
    assert kept_by_a_caller(branch, tree, 2) is None  # its branch returns before the emptying


# ---- (c) a helper method returning a container of copies -------------------------------------

def test_helper_returning_copies_is_an_error_and_references_are_not():
    got = _scan(EVIDENCE_CORPUS / _CASES)
    f = got[("KeptCopiesDecodeLayer", "_weights")]
    assert (f.category, f.severity) == ("lazy-cache", Severity.ERROR)
    assert f.derives_from == "layer.experts.kernel_copies (in _kernel_weights())"
    assert ("KeptCopiesDecodeLayer", "_refs") not in got  # references to kept parameters
    refilled = got[("RefilledCopiesDecodeLayer", "_weights")]  # keep_copies() copies back
    assert refilled.severity is Severity.INFO and "keep_copies() refills" in refilled.reason


def test_canary_a_helper_copying_a_weight_is_found_again(tmp_path):
    got = _planted(tmp_path, "        refs = DecodeWeights(w13=layer.experts.w13_weight,",
                   "        refs = DecodeWeights(w13=layer.experts.w13_weight.float(),")
    assert got[("KeptCopiesDecodeLayer", "_refs")].severity is Severity.ERROR


def test_canary_kept_copies_without_the_copy_back_are_errors_again(tmp_path):
    got = _planted(tmp_path, "        old.copy_(new)\n", "        old.set_(new)\n")
    assert got[("RefilledCopiesDecodeLayer", "_weights")].severity is Severity.ERROR


def test_returned_copies_and_refilled_in_place_on_text():
    helper = ast.parse("def h(self, layer):\n    a, b = layer.e.kept\n"
                       "    w = W(a=a, b=layer.n.weight)\n    return w\n").body[0]
    found = returned_copies(helper)
    assert found is not None and (found.container, found.argument, found.source) == \
        ("W", "a", "layer.e.kept") and found.kept_tuple
    refs = ast.parse("def h(self, layer):\n    return W(a=layer.w, b=layer.shape)\n").body[0]
    assert returned_copies(refs) is None
    copied = ast.parse("def h(self, layer):\n    return W(a=layer.w13_weight.float())\n").body[0]
    assert returned_copies(copied).source == "layer.w13_weight.float()"
    assert returned_copies(ast.parse("def h(s, l):\n    a, b = l.w.shape\n"
                                     "    return W(a=a)\n").body[0]) is None
    keep = "def keep(layer, c):\n    if x:\n        layer.kept = c\n        return\n" \
           "    for o, n in zip(layer.kept, c):\n        o.copy_(n)\n\ndef other():\n    pass\n"
    assert refilled_in_place("kept", keep) == "keep"
    assert refilled_in_place("kept", keep.replace("o.copy_(n)", "o.set_(n)")) is None
    assert refilled_in_place("other", keep) is None
