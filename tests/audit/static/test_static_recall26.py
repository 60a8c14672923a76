"""Recall classes of issue 21 (rules26, ``recall26_cases.py``): a CPU-offload staging copy of a
parameter's ``.data`` (vLLM's prefetch offloader ``_cpu_storage``), made in place or in a local
that is then stored. The rule has a true positive,
a false-positive twin and canaries that plant the bug back or remove the rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from derivgraph.audit.static import rules as rules_module
from derivgraph.audit.static import scope as scope_module
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from derivgraph.audit.static.staging import (
    STAGING_COPY_RE,
    has_staging_copy,
    is_staging_method,
    refreshed_per_step,
)
from tests.audit.static.expectations import EVIDENCE_CORPUS, planted_copy

CASES = "recall26_cases.py"


def _scan(folder: Path = EVIDENCE_CORPUS) -> dict[tuple[str | None, str], object]:
    """(class, attribute) -> the first finding (by line) of the corpus file."""
    found = sorted(scan([folder / CASES], specs=[], jobs=1).findings, key=lambda f: -f.line)
    return {(f.cls, f.attr): f for f in found}


def _planted(tmp_path: Path, old: str, new: str) -> dict[tuple[str | None, str], object]:
    """Plant ``new`` for ``old`` (into a copy already planted in ``tmp_path``, if any)."""
    planted = tmp_path / CASES
    planted_copy(planted if planted.exists() else EVIDENCE_CORPUS / CASES, tmp_path, old, new)
    return _scan(tmp_path)


def _line(text: str) -> int:
    source = (EVIDENCE_CORPUS / CASES).read_text()
    return source.count("\n", 0, source.index(text)) + 1


# ---- (a) a CPU-offload staging copy ---------------------------------------------------------

def test_the_staging_copy_is_an_error_at_its_allocation_with_reader_and_weight():
    host = _scan()[("HostStagingOffloader", "_host")]
    assert (host.category, host.severity, host.store) == ("tensor-attr", Severity.ERROR,
                                                          "model-load-copy")
    assert host.line == _line("self._host = torch.empty_strided(")
    assert host.derives_from == "self._param"
    # the reader is the prefetch back into the GPU slot, not the fill itself
    assert f":{_line('self._slot.copy_(self._host, non_blocking=True)')} " in host.reader
    assert host.via == ("HostStagingOffloader._stage_to_host",)


def test_a_staging_copy_the_step_makes_again_is_quiet():
    got = _scan()
    assert not any(f.severity is not Severity.INFO for (cls, _), f in got.items()
                   if cls == "RefreshedStagingOffloader")


def test_canary_a_copy_no_step_refreshes_is_an_error(tmp_path):
    got = _planted(tmp_path, "        self._stage_to_host()  # the copy is made again",
                   "        pass  # the copy is made again")
    staged = got[("RefreshedStagingOffloader", "_staged")]
    assert (staged.severity, staged.store) == (Severity.ERROR, "model-load-copy")
    assert staged.line == _line("self._staged = torch.empty_like(")


def test_canary_without_the_staging_roots_the_copy_is_missed(monkeypatch):
    monkeypatch.setattr(scope_module, "is_staging_method", lambda func: False)
    assert ("HostStagingOffloader", "_host") not in _scan()


def test_canary_a_copy_of_a_buffer_of_no_object_is_no_site(tmp_path):
    _planted(tmp_path, "self._host.copy_(param.data)\n        param.data",
             "self._host.fill_(0)\n        param.data")
    got = _planted(tmp_path, "        else:\n            self._host.copy_(param.data)",
                   "        else:\n            self._host.fill_(0)")
    host = got.get(("HostStagingOffloader", "_host"))
    assert host is None or host.line != _line("self._host = torch.empty_strided(")


def test_a_local_copy_the_staging_step_fills_and_stores_is_an_error():
    got = scan([EVIDENCE_CORPUS / CASES], specs=[], jobs=1).findings
    line = _line("self._host = pinned")
    repinned = next(f for f in got if f.line == line)
    assert (repinned.attr, repinned.severity, repinned.store) == ("_host", Severity.ERROR,
                                                                  "model-load-copy")
    assert repinned.derives_from == "self._param"
    scratch = next(f for f in got if f.attr == "_scratch")  # zeroed scratch: no weight values
    assert (scratch.severity, scratch.store) == (Severity.INFO, "model-load-kept")


def test_canary_a_local_filled_from_no_object_tensor_stays_info(tmp_path):
    planted_copy(EVIDENCE_CORPUS / CASES, tmp_path, "            pinned.copy_(param.data)\n",
                 "            pinned.fill_(0)\n")
    line = _line("self._host = pinned")
    got = scan([tmp_path / CASES], specs=[], jobs=1).findings
    assert all(f.severity is Severity.INFO for f in got if f.line == line)


def test_canary_without_the_filled_local_rule_the_repinned_copy_is_info(monkeypatch):
    monkeypatch.setattr(rules_module, "filled_local_source", lambda *args: None)
    line = _line("self._host = pinned")
    got = scan([EVIDENCE_CORPUS / CASES], specs=[], jobs=1).findings
    assert [f.severity for f in got if f.line == line] == [Severity.INFO]


@pytest.mark.parametrize(("source", "expected"), [
    ("self.buf.copy_(param.data)", True),
    ("self.buf = p.data.to('cpu')", True),
    ("self.buf = p.data.clone()", True),
    ("self.buf.copy_(self.weight.data)", False),  # the object's own weight: post-load code's
    ("self.buf = p.data", False),  # an alias, not a copy
    ("buf.copy_(param.data)", False),  # a local, not the object's state
    ("self.buf.copy_(param)", False),  # no .data
])
def test_staging_method_on_text(source: str, expected: bool):
    func = ast.parse(f"def f(self, param, p):\n    {source}\n").body[0]
    assert is_staging_method(func) is expected
    if expected:  # the text test never misses what the parsed test finds
        assert has_staging_copy(f"x = 1\nself.y.data = 2\n    {source}\n")


def test_the_text_test_reads_only_lines_naming_data():
    assert not has_staging_copy("self.buf.copy_(param)\nz = p.data\n")
    assert has_staging_copy("z = p.data\nself.buf.copy_(param.data)")  # the last line
    assert STAGING_COPY_RE.search("self.buf.copy_(param.data)")


def test_refreshed_per_step_reads_the_step_methods_only():
    tree = ast.parse("class C:\n"
                     "    def forward(self, x):\n        self.stage()\n"
                     "    def setup(self):\n        self.other()\n")
    methods = {f.name: f for f in tree.body[0].body}
    assert refreshed_per_step("stage", methods)
    assert not refreshed_per_step("other", methods)  # called by a setup method only
