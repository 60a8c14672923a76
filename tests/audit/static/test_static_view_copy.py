"""Two recall classes next to their false positives (``view_copy_cases.py``): a view a layer's
rerunning post-load step makes of a kept tensor aliases the reload temporary (a reference,
not a view of kept storage), unless the step runs on the live tensors (attention); a copy made
once and refilled with ``copy_`` only by post-load code goes stale after a kernel-format reload,
unless code that runs after load refreshes it. Canaries remove each rule and watch the true
positive go quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from derivgraph.audit.static import semantics, stores
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS as CORPUS
from tests.audit.static.expectations import planted_copy

NAME = "view_copy_cases.py"


def _findings(path: Path) -> dict[str, tuple[str, str, int]]:
    return {f.attr: (f.severity.value, f.store, f.line)
            for f in scan([path], specs=[], jobs=1).findings}


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_view_made_by_a_layer_step_is_a_reference_to_the_reload_temporary():
    got = _findings(CORPUS / NAME)
    line = _line_of(CORPUS / NAME, "layer.bmm_weight = ")
    assert got["bmm_weight"] == ("warning", "reference", line)
    # the false positive of the class: an attention step's view of the live kept tensor
    assert got["grouped_sink_weight"][:2] == ("info", "view-of-kept")


def test_a_copy_refilled_only_by_post_load_code_is_stale_after_a_kernel_format_reload():
    got = _findings(CORPUS / NAME)
    line = _line_of(CORPUS / NAME, "self.sinks_f32 = source.to(torch.float32)")
    assert got["sinks_f32"] == ("warning", "refilled-copy", line)
    # the false positive of the class: the same copy refreshed where it is read
    assert got["bias_f32"][:2] == ("info", "refilled-copy")


def test_canary_without_the_temporary_view_rule_the_view_is_quiet(monkeypatch):
    monkeypatch.setattr(semantics, "runs_on_kept", lambda site: True)
    got = _findings(CORPUS / NAME)
    assert got["bmm_weight"][:2] == ("info", "view-of-kept")


def test_canary_without_the_refilled_copy_rule_the_copy_is_quiet(monkeypatch):
    monkeypatch.setattr(stores, "refills", lambda func, chain: False)
    got = _findings(CORPUS / NAME)
    assert "sinks_f32" not in got and "bias_f32" not in got


@pytest.mark.parametrize(("old", "new", "attr"), [
    # the attention step's view, moved into a non-attention kernel: a reload temporary's view
    ("class GroupedSinkAttentionImpl:", "class GroupedSinkLinearKernel:", "grouped_sink_weight"),
    # the refresh where the copy is read, removed: only post-load code refills it
    ("        self.bias_f32.copy_(self._bias_source)\n", "", "bias_f32"),
])
def test_canary_each_false_positive_is_quiet_only_for_its_reason(tmp_path, old, new, attr):
    path = planted_copy(CORPUS / NAME, tmp_path, old, new)
    assert Severity(_findings(path)[attr][0]) is Severity.WARNING
