"""The hostile and broken spec corpus (tests/resources/specs/): every file is rejected by
`derivgraph validate` and by `compile_plan`, with file:line, its rule code and a fix, before any
tensor or attribute is touched. Each file's header names the defect and the expected code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tests.toy as toy_module
from derivgraph import SpecValidationError, compile_plan, load_spec_file
from derivgraph.cli import main
from tests.toy import Toy

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parents[1] / "resources" / "specs"
FILES = sorted(CORPUS.glob("*.yaml"))
# Rejected while reading the file (YAML, encoding, size): there is no spec to compile.
LOAD_TIME = {"DG001", "DG016"}


def _expected(path: Path) -> tuple[str, str]:
    head = path.read_bytes()[:400].decode("ascii", "replace")
    what = re.search(r"^# tests: (.+)$", head, re.M)
    code = re.search(r"^# expect: (DG\d{3})$", head, re.M)
    assert what and code, f"{path.name} needs '# tests:' and '# expect:' header lines"
    return what.group(1), code.group(1)


def test_corpus_has_forty_classes():
    assert len(FILES) >= 40
    assert len({_expected(f)[0] for f in FILES}) == len(FILES)  # one class of defect each


def _snapshot(model: torch.nn.Module) -> dict[str, object]:
    """Everything a bad spec could touch: tensors (object, address, value), attributes and their
    ids on the model, its submodules and plain holders, the class and the module's globals."""
    state = {n: (id(t), t.data_ptr(), t.clone()) for n, t in
             model.state_dict(keep_vars=True).items()}
    objs = {"model": model, "sub": model.sub, "holder": model.holder}
    attrs = {k: {a: id(v) for a, v in vars(o).items()} for k, o in objs.items()}
    registries = {k: {r: dict(getattr(o, r)) for r in ("_parameters", "_buffers", "_modules")}
                  for k, o in objs.items() if isinstance(o, torch.nn.Module)}
    return {
        "state": state, "attrs": attrs, "registries": registries,
        "class": dict(vars(Toy)), "globals": dict(vars(toy_module)),
        "forward": Toy.forward,
    }


def _assert_untouched(model: torch.nn.Module, snap: dict[str, object]) -> None:
    now = _snapshot(model)
    assert now["attrs"] == snap["attrs"]
    assert now["registries"] == snap["registries"]
    assert now["class"] == snap["class"] and now["globals"] == snap["globals"]
    assert now["forward"] is snap["forward"]
    assert set(now["state"]) == set(snap["state"])
    for name, (obj, ptr, value) in snap["state"].items():
        o2, p2, v2 = now["state"][name]
        assert (o2, p2) == (obj, ptr) and torch.equal(v2, value), name


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_validate_cli_rejects(path, capsys):
    _, code = _expected(path)
    rc = main(["validate", str(path)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc == 1, text
    assert sorted(set(re.findall(r"DG\d{3}", text))) == [code], text
    assert re.search(re.escape(str(path)) + r":[1-9]\d*: " + code, text), text
    assert "fix: " in text and "Traceback" not in text


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_compile_plan_rejects_before_touching_anything(path):
    _, code = _expected(path)
    model = Toy()
    model.post_load()
    snap = _snapshot(model)
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, load_spec_file(path))
    issues = info.value.issues
    assert code in [i.rule.split()[0] for i in issues], str(info.value)
    assert all(i.location.file == str(path) and i.location.line > 0 for i in issues)
    assert all(i.fix for i in issues)
    if code not in LOAD_TIME:
        assert not hasattr(model, "out")
    _assert_untouched(model, snap)


def test_validate_subprocess_whole_corpus_no_traceback_no_torch():
    """One real CLI process over every file: exit 1, no traceback, and torch is never imported
    (no file here declares a CUDA device). Files that fail to load are reported together and
    stop the run before the rule checks, so each file is checked alone in-process above."""
    light = [str(f) for f in FILES if "cuda" not in f.read_text("utf-8", "replace")]
    code = ("import sys; from derivgraph.cli import main; rc = main(['validate', *sys.argv[1:]]);"
            "sys.stdout.write('TORCH=%s RC=%d' % ('torch' in sys.modules, rc))")
    proc = subprocess.run([sys.executable, "-c", code, *light], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    assert proc.stdout.rstrip().endswith("TORCH=False RC=1"), text[-2000:]
    assert re.search(r"^\d+ spec problem\(s\):", proc.stderr, re.M), text[-2000:]  # stderr


def test_validate_of_good_specs_does_not_import_torch():
    code = ("import sys; from derivgraph.cli import main; rc = main(['validate', 'specs']);"
            "assert rc == 0; assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
