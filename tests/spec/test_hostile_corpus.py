"""The hostile corpus (tests/fixtures/hostile/): specs aimed at writing a source, exhausting
time or memory, slipping names and owners past the rules, and hiding inference errors or faults.

Every file is rejected by ``derivgraph validate`` and by ``compile_plan`` with the same rule
(``manifest.yaml`` names it), with file:line and a fix, before the model changes: every tensor's
object, address and value fingerprint and every attribute list are compared before and after.
A file whose defect only the model shows (``model: true``) passes the model-free ``validate``
and is rejected by ``validate --model tests.fixtures.hostile.model:build``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from derivgraph import compile_plan, load_spec_file
from derivgraph.cli import main
from derivgraph.errors import DerivgraphError, Rule
from tests.fixtures.hostile.model import assert_unchanged, build, snapshot

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "hostile"
MANIFEST = yaml.safe_load((CORPUS / "manifest.yaml").read_text())["cases"]
STEMS = sorted(MANIFEST)
FACTORY = "tests.fixtures.hostile.model:build"
CPU_LIMIT_S, MEMORY_LIMIT_MB = 1.0, 100.0


def test_manifest_lists_every_file_and_every_class():
    files = {p.stem for p in CORPUS.glob("*.yaml")} - {"manifest"}
    assert files == set(MANIFEST)
    assert len(files) >= 60
    assert {case["class"] for case in MANIFEST.values()} >= {1, 3, 4, 5, 6}
    for stem, case in MANIFEST.items():
        head = (CORPUS / f"{stem}.yaml").read_text().splitlines()[:2]
        assert head[0].startswith("# tests: ") and head[1] == f"# expect: {case['rule']}", stem


def _validate(args: list[str], capsys) -> tuple[int, str]:
    rc = main(["validate", *args])
    out = capsys.readouterr()
    return rc, out.out + out.err


@pytest.mark.parametrize("stem", STEMS)
def test_validate_rejects(stem, capsys):
    case, path = MANIFEST[stem], str(CORPUS / f"{stem}.yaml")
    rc, text = _validate([path], capsys)
    assert "Traceback" not in text
    if case["model"]:  # the defect is in what the model holds: only the model shows it
        assert rc == 0, text
        rc, text = _validate(["--model", FACTORY, path], capsys)
    assert rc == 1, text
    assert "Traceback" not in text
    assert case["rule"] in re.findall(r"DG\d{3}", text), text
    assert re.search(re.escape(path) + r":[1-9]\d*: " + case["rule"], text), text
    assert "fix: " in text


@pytest.mark.parametrize("stem", STEMS)
def test_compile_rejects_and_leaves_the_model_as_it_was(stem):
    case, path = MANIFEST[stem], CORPUS / f"{stem}.yaml"
    model = build()
    before = snapshot(model)
    with pytest.raises(DerivgraphError) as info:
        compile_plan(model, load_spec_file(path))
    issues = info.value.issues
    assert case["rule"] in [Rule(i.rule).code for i in issues], str(info.value)
    for issue in issues:
        assert issue.location.file == str(path) and issue.location.line > 0, str(issue)
        assert issue.fix
    assert_unchanged(model, before)


def test_every_refusal_is_fast_and_small():
    """One interpreter refuses every file (validate and compile); each costs < 1 s of CPU and
    < 100 MB (Python heap and native RSS growth)."""
    proc = subprocess.run([sys.executable, str(CORPUS / "measure.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    costs = json.loads(proc.stdout)
    assert set(costs) == set(MANIFEST)
    slow = {s: c for s, c in costs.items()
            if max(c["validate_cpu_s"], c["compile_cpu_s"]) >= CPU_LIMIT_S}
    big = {s: c for s, c in costs.items()
           if max(c["heap_mb"], c["rss_growth_mb"]) >= MEMORY_LIMIT_MB}
    assert not slow and not big, (slow, big)


def test_the_fingerprint_check_catches_a_write():
    """Canary: the snapshot comparison goes red on a one-element write and on a new attribute."""
    model = build()
    before = snapshot(model)
    model.layers[1].scale.data[2] += 1
    with pytest.raises(AssertionError, match="scale"):
        assert_unchanged(model, before)
    model = build()
    before = snapshot(model)
    model.holder.extra = 1
    with pytest.raises(AssertionError, match="attrs"):
        assert_unchanged(model, before)


def test_engine_formula_that_is_ignored_is_reported_at_validate(tmp_path, capsys, caplog):
    """A `kind: engine` formula naming an unregistered op is ignored (the engine's tensor is
    adopted): validate accepts the file and says so, with file:line."""
    path = tmp_path / "engine.yaml"
    path.write_text("version: 1\nspecs:\n  - name: eng\n    target: {module_class: HostileModel}\n"
                    "    derived:\n      - {name: w_copy, owner: holder, kind: engine, "
                    "formula: 'cutlass_encode(weight)'}\n")
    with caplog.at_level("WARNING", logger="derivgraph.spec.check"):
        rc, text = _validate([str(path)], capsys)
    assert rc == 0, text
    warned = [r.getMessage() for r in caplog.records]
    assert any(f"{path}:6" in m and "formula 'cutlass_encode(weight)' is ignored" in m
               for m in warned), warned
    path.write_text(path.read_text().replace("cutlass_encode(weight)", "weight * 2.0"))
    caplog.clear()
    with caplog.at_level("WARNING", logger="derivgraph.spec.check"):
        assert _validate([str(path)], capsys)[0] == 0
    assert not caplog.records  # a registered op: the formula is used, nothing to say


def test_validate_with_the_model_accepts_a_good_spec(tmp_path, capsys):
    """Canary for `validate --model`: a spec compile accepts passes it, and the model is not
    touched (nothing is bound)."""
    path = tmp_path / "good.yaml"
    path.write_text("version: 1\nspecs:\n  - name: good\n    target: {module_class: HostileModel}\n"
                    "    derived:\n      - {name: inv, owner: holder, kind: attribute, "
                    "formula: 'reciprocal(scale)'}\n")
    rc, text = _validate(["--model", FACTORY, str(path)], capsys)
    assert rc == 0 and text.startswith("ok: 1 spec(s)"), text
