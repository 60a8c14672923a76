"""The ``derivgraph audit static`` command line: JSON, SARIF, text, --strict, output, progress."""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
from pathlib import Path

import pytest

from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.sites import CATEGORIES
from derivgraph.cli import main
from tests.audit.static.expectations import CORPUS, DECLARED, EXPECTED, SARIF_SCHEMA, SPECS


def test_cli_json(capsys):
    assert main(["audit", "static", str(CORPUS), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == sum(len(v) for v in EXPECTED.values())
    keys = {"file", "line", "attr", "reason", "category", "cls", "function", "declared",
            "suggestion"}
    assert all(keys <= row.keys() for row in rows)
    row = next(r for r in rows if r["attr"] == "a1_gscale")
    assert (Path(row["file"]).name, row["line"], row["category"], row["declared"]) == (
        "quant_method.py", 25, "register", False)
    assert row["cls"] == "Fp8StyleLinearMethod"
    assert row["function"] == "Fp8StyleLinearMethod.process_weights_after_loading"
    assert row["suggestion"].startswith("- name: fp8-style-linear-method-a1-gscale")


def test_cli_sarif_validates_against_the_official_schema(capsys):
    code = main(["audit", "static", str(CORPUS / "declared.py"), str(CORPUS / "canary.py"),
                 "--specs", str(SPECS / "declared.yaml"), "--format", "sarif"])
    assert code == 0
    log = json.loads(capsys.readouterr().out)
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema = pytest.importorskip("jsonschema")  # the `test` extra installs it
    validator = jsonschema.Draft4Validator(schema,
                                           format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        c.rule_id for c in CATEGORIES.values()]
    results = run["results"]
    assert len(results) == len(EXPECTED["declared.py"]) + 1
    fails = [r for r in results if r["kind"] == "fail"]
    passes = [r for r in results if r["kind"] == "pass"]
    assert len(passes) == len(DECLARED) and all(r["level"] == "none" for r in passes)
    assert {r["properties"]["attr"] for r in fails} == {
        "undeclared_const", "other_inv", "canary_strides"}
    # constants (ones, full) read after load but derived from no weight: warnings
    assert {r["properties"]["attr"]: r["level"] for r in fails} == {
        "undeclared_const": "warning", "other_inv": "error", "canary_strides": "warning"}
    assert all(r["properties"]["severity"] == r["level"] and r["properties"]["verdict"] ==
               "unchecked" and r["properties"]["fix"] for r in fails)
    loc = fails[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uriBaseId"] == "SRCROOT"
    assert loc["region"]["startLine"] >= 1
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/")
    assert all(r["ruleId"] == run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"]
               for r in results)


def test_cli_text_with_rich(capsys):
    pytest.importorskip("rich")
    assert main(["audit", "static", str(CORPUS / "canary.py"), "--show-declared"]) == 0
    out = capsys.readouterr().out
    assert "undeclared derived state (1)" in out
    assert "┃" in out or "│" in out  # a rich table
    assert "canary_strides" in out and "tensor-attr" in out and "error" in out
    assert "1 undeclared error/warning, 0 with a computed name, 0 info, 0 declared" in out


def test_cli_text_without_rich(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rich", None)  # `import rich` now raises ImportError
    assert main(["audit", "static", str(CORPUS / "quant_method.py"), "--suggest",
                 "--show-info"]) == 0
    out = capsys.readouterr().out
    assert "┃" not in out and "│" not in out
    heads = [line for line in out.splitlines() if re.match(r"\S+\.py:\d+: [A-Z]+ ", line)]
    # one clickable file:line per row, errors first, then warnings, then info; the built-in
    # library declares g1_alphas (a layer-level spec, matched through the object graph)
    assert len(heads) == len(EXPECTED["quant_method.py"]) - 1
    assert "layer.g1_alphas" not in out
    severities = [line.split()[1] for line in heads]
    assert severities == sorted(severities, key=["ERROR", "WARNING", "INFO"].index)
    # the 4 folds are applied once per load (info); the `.set_()` stays a warning
    assert severities.count("ERROR") == 5 and severities.count("WARNING") == 1
    first = heads[0].split(":")
    assert first[0].endswith("quant_method.py") and first[1] == "31"
    assert "consequence: stale under graphs" in out
    assert "fix: keep it as a device tensor" in out
    assert "undeclared by severity: error 5, warning 1; info 11" in out
    assert "suggested specs" in out and "- name: fp8-style-linear-method-input-scale-float" in out


def test_render_text_can_require_rich(monkeypatch):
    from derivgraph.audit.static.report import render_text

    monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(ImportError, match="rich is not installed"):
        render_text(scan([CORPUS / "canary.py"], specs=[], jobs=1), use_rich=True)


def test_canary_strict_fails_then_passes_once_declared(capsys):
    canary = str(CORPUS / "canary.py")
    assert main(["audit", "static", canary, "--strict"]) == 1
    assert "canary_strides" in capsys.readouterr().out
    assert main(["audit", "static", canary, "--strict", "--specs", str(SPECS / "canary.yaml")]) == 0
    assert "0 undeclared error/warning, 0 with a computed name, 0 info, 1 declared" in \
        capsys.readouterr().out


def test_strict_exits_2_on_an_empty_tree(tmp_path, capsys):
    (tmp_path / "README.txt").write_text("no python here\n")
    assert main(["audit", "static", str(tmp_path), "--strict"]) == 2
    assert "nothing could be scanned" in capsys.readouterr().err
    assert main(["audit", "static", str(tmp_path)]) == 2


def test_strict_exits_2_when_every_file_fails_to_parse(tmp_path, capsys):
    (tmp_path / "bad.py").write_text("def process_weights_after_loading(self, layer:\n")
    (tmp_path / "worse.py").write_text("class Broken(:\n    pass\n")  # no post-load code
    assert main(["audit", "static", str(tmp_path), "--strict"]) == 2
    assert "nothing could be scanned" in capsys.readouterr().err
    report = scan([tmp_path / "worse.py"], specs=[], jobs=1)
    assert report.nothing_scanned and len(report.errors) == 1
    # one good file among bad ones: scanned, and --strict judges its findings
    shutil.copy(CORPUS / "canary.py", tmp_path / "canary.py")
    assert main(["audit", "static", str(tmp_path), "--strict"]) == 1
    (tmp_path / "canary.py").write_text("x = 1\n")
    assert main(["audit", "static", str(tmp_path), "--strict"]) == 0


def test_cli_output_file(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["audit", "static", str(CORPUS / "canary.py"), "--format", "json",
                 "--output", str(out)]) == 0
    assert "wrote json report of 1 sites (1 undeclared)" in capsys.readouterr().out
    assert json.loads(out.read_text())[0]["attr"] == "canary_strides"


def test_progress_logs_without_a_tty(caplog, monkeypatch):
    from derivgraph.cli import audit_static as static_cli

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with caplog.at_level(logging.INFO, logger="derivgraph.cli.audit_static"):
        with static_cli._progress() as progress:
            for i in range(1, 21):
                progress(i, 20, f"f{i}.py")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[-1] == "static audit: 20/20 files (f20.py)"
    assert 2 <= len(lines) <= 20
