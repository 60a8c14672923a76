"""Scanning mechanics of the static audit: no imports, errors, partial parsing and workers."""

from __future__ import annotations

import shutil
import sys

from derivgraph.audit.static.module import ModuleContext, audit_source
from derivgraph.audit.static.scan import collect_files, locate_package, scan
from derivgraph.cli import main
from tests.audit.static.expectations import CORPUS, EXPECTED

_BOOM = """raise SystemExit("the static audit imported scanned code")

import torch


class BoomExperts:
    def __init__(self, e):
        self.consts = torch.ones(e)
"""


def test_scanned_code_is_never_imported(tmp_path, monkeypatch):
    pkg = tmp_path / "boompkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_BOOM)
    (pkg / "experts.py").write_text(_BOOM)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert locate_package("boompkg") == pkg
    assert locate_package("boompkg.experts") == pkg / "experts.py"
    report = scan(package="boompkg", specs=[], jobs=1)
    assert {(f.file, f.line, f.attr) for f in report.findings} == {
        ("boompkg/__init__.py", 8, "consts"), ("boompkg/experts.py", 8, "consts")}
    assert "boompkg" not in sys.modules and "boompkg.experts" not in sys.modules
    assert report.roots["PKGROOT"] == str(tmp_path)


def test_missing_package_and_path_are_errors(capsys):
    assert main(["audit", "static", "--package", "no_such_package_xyz"]) == 2
    assert "no package named" in capsys.readouterr().err
    assert main(["audit", "static", "does/not/exist.py"]) == 2
    assert main(["audit", "static"]) == 2


def test_unparsable_file_is_reported_and_skipped(tmp_path):
    (tmp_path / "bad.py").write_text("def process_weights_after_loading(self, layer:\n")
    shutil.copy(CORPUS / "canary.py", tmp_path / "canary.py")
    report = scan([tmp_path], specs=[], jobs=1)
    assert [f.attr for f in report.findings] == ["canary_strides"]
    assert len(report.errors) == 1 and "bad.py:" in report.errors[0]


def test_partial_parse_equals_whole_file_parse():
    files = collect_files([CORPUS])
    context = ModuleContext({}, {})
    for src in files:
        text = src.path.read_text()
        assert audit_source(text, src.display, src.module, False, context, segmented=True) == \
            audit_source(text, src.display, src.module, False, context, segmented=False)


_METHODS = '''import functools

import torch


class BaseMethod:
    def _inner(self, layer):
        layer.inner = torch.zeros(4)


@functools.total_ordering
class LinearThingMethod(
    BaseMethod,
):
    table = {
        "a": 1,
    }

    @property
    def n(self):
        return 1

    @n.setter
    def n(self, value):
        self._n = value

    def process_weights_after_loading(
        self,
        layer,
    ):
        self._helper(layer)

    def _helper(self, layer):
        layer.helped = layer.weight.t()
        self._inner(layer)

    def forward(self, x):
        self.cache = torch.empty_like(x)
        return x
'''


def test_partial_parse_keeps_only_reached_methods_and_finds_the_same_sites(tmp_path):
    from derivgraph.audit.static.segments import _ClassText

    path = tmp_path / "methods.py"
    path.write_text(_METHODS)
    context = ModuleContext({"LinearThingMethod": frozenset({"LinearThingMethod", "BaseMethod"}),
                             "BaseMethod": frozenset({"BaseMethod"})}, {})
    seg = audit_source(_METHODS, "methods.py", "methods", False, context, segmented=True)
    full = audit_source(_METHODS, "methods.py", "methods", False, context, segmented=False)
    assert seg == full
    assert [(s.line, s.attr, s.function) for s in seg] == [
        (8, "inner", "BaseMethod._inner"), (34, "helped", "LinearThingMethod._helper")]
    start = _METHODS.index("@functools.total_ordering")
    shape = _ClassText.of(_METHODS[start:])
    assert set(shape.methods) == {"n", "process_weights_after_loading", "_helper", "forward"}
    assert len(shape.methods["n"]) == 2  # the property and its setter
    rendered = shape.render({"process_weights_after_loading"})
    assert "forward" not in rendered and rendered.count("\n") == shape.render(set()).count("\n")


def test_partial_parse_falls_back_when_a_cut_lands_in_a_string(tmp_path):
    text = (CORPUS / "canary.py").read_text() + (
        '\n\ndef helper():\n    """Docs with a column-0 line:\nclass NotAClass:\n"""\n'
        "    return 1\n")
    path = tmp_path / "tricky.py"
    path.write_text(text)
    report = scan([path], specs=[], jobs=1)
    assert [(f.line, f.attr) for f in report.findings] == [(8, "canary_strides")]
    assert report.errors == []


def test_worker_processes_give_the_same_report(tmp_path):
    for i in range(40):
        shutil.copy(CORPUS / "quant_method.py", tmp_path / f"m{i:02d}.py")
    one = scan([tmp_path], specs=[], jobs=1)
    two = scan([tmp_path], specs=[], jobs=2)
    assert len(one.findings) == 40 * len(EXPECTED["quant_method.py"])
    assert one.findings == two.findings
