"""Recall classes of issue 21 after the v10 measurement (``recall23_cases.py``): the CPU clause's
unpacked copy kept next to a weight packed in place, on a branch that returns before the
step's emptying. Each rule has a true positive, a false-positive twin and a canary that plants
the bug back."""

from __future__ import annotations

import pytest

from derivgraph.audit.static import platforms
from derivgraph.audit.static.platforms import empties_on_path, kept_by_a_caller
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS, EvidenceCase, findings_by_owner

_CASE = EvidenceCase("recall23_cases.py")
_CASES = _CASE.name
_line, _scan, _planted = _CASE.line, findings_by_owner, _CASE.planted


# ---- (b) CPU clause: an unpacked copy next to a weight packed in place ------------------------

def test_unpacked_copy_next_to_a_packed_weight_is_an_error_and_a_dropped_source_info():
    got = _scan(EVIDENCE_CORPUS / _CASES)
    kept = got[(None, "unpacked_conv_copy")]
    assert (kept.category, kept.severity) == ("tensor-attr", Severity.ERROR)
    assert kept.derives_from == "layer.weight"
    assert f":{_line('ops.conv1d_update(x, layer.unpacked_conv_copy)')} " in kept.reader
    dropped = got[(None, "unpacked_dropped_copy")]  # the weight is emptied on the copy's path
    assert dropped.severity is Severity.INFO
    assert "its step empties the parameter it reads" in dropped.evidence


def test_canary_when_the_branch_runs_into_the_emptying_the_copy_is_info_again(tmp_path):
    got = _planted(tmp_path, "        return\n    if remove_weight:\n",
                   "    if remove_weight:\n")
    f = got[(None, "unpacked_conv_copy")]
    assert f.severity is Severity.INFO and "empties the parameter it reads" in f.evidence


def test_canary_without_the_path_check_the_unpacked_copy_is_info(monkeypatch):
    monkeypatch.setattr(platforms, "empties_on_path", lambda body, at: True)
    assert _scan(EVIDENCE_CORPUS / _CASES)[(None, "unpacked_conv_copy")].severity is Severity.INFO


@pytest.mark.parametrize(("body", "at", "expected"), [
    # the store's branch returns before the emptying: off its path
    ("def s(layer, r):\n    if conv:\n        layer.c = w.clone()\n        return\n"
     "    if r:\n        layer.weight = P(torch.empty(0))\n", 2, False),
    # the emptying follows the store on its own path
    ("def s(layer, r):\n    layer.c = w.clone()\n    if r:\n"
     "        layer.weight = P(torch.empty(0))\n", 1, True),
    # an emptying before the store
    ("def s(layer):\n    layer.weight = P(torch.empty(0))\n    if conv:\n"
     "        layer.c = w.clone()\n        return\n", 3, True),
    # no emptying at all
    ("def s(layer):\n    layer.c = w.clone()\n", 1, False),
])
def test_empties_on_path_on_text(body: str, at: int, expected: bool):
    assert empties_on_path(body, at) is expected


def test_kept_by_a_caller_unchanged_for_a_branch_that_returns_first():
    body = ("def step(layer, remove: bool):\n    if conv:\n        layer.f = make(layer.weight)\n"
            "        return\n    if remove:\n        layer.weight = P(torch.empty(0))\n")
    assert kept_by_a_caller(body, {"b.py": "step(layer, remove=False)\n"}, 2) is None
