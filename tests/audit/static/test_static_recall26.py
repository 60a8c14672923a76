"""Recall classes of issue 21 (rules26, ``recall26_cases.py``): a CPU-offload staging copy of a
parameter's ``.data`` (vLLM's prefetch offloader ``_cpu_storage``). The rule has a true positive,
a false-positive twin and canaries that plant the bug back or remove the rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from derivgraph.audit.static import scope as scope_module
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from derivgraph.audit.static.staging import (
    STAGING_COPY_RE,
    is_staging_method,
    refreshed_per_step,
)
from tests.audit.static.expectations import EVIDENCE_CORPUS, planted_copy

CASES = "recall26_cases.py"


def _scan(folder: Path = EVIDENCE_CORPUS) -> dict[tuple[str | None, str], object]:
    """(class, attribute) -> finding of the corpus file."""
    return {(f.cls, f.attr): f for f in scan([folder / CASES], specs=[], jobs=1).findings}


def _planted(tmp_path: Path, old: str, new: str) -> dict[tuple[str | None, str], object]:
    planted_copy(EVIDENCE_CORPUS / CASES, tmp_path, old, new)
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
    got = _planted(tmp_path, "        self._host.copy_(param.data)\n",
                   "        self._host.fill_(0)\n")
    assert ("HostStagingOffloader", "_host") not in got


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
        assert STAGING_COPY_RE.search(source)


def test_refreshed_per_step_reads_the_step_methods_only():
    tree = ast.parse("class C:\n"
                     "    def forward(self, x):\n        self.stage()\n"
                     "    def setup(self):\n        self.other()\n")
    methods = {f.name: f for f in tree.body[0].body}
    assert refreshed_per_step("stage", methods)
    assert not refreshed_per_step("other", methods)  # called by a setup method only
