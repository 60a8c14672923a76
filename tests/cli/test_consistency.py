"""The command line speaks one language: ``--format``, ``--version``, ``-v`` anywhere, errors
on stderr with exit 2, verdicts that match exit statuses, quiet output, self-consistent counts,
tables readable at any width, progress only on a TTY, and a light ``ops``/``--help``."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from derivgraph import builtin_specs
from derivgraph.cli import build_parser, main
from derivgraph.cli.common import progress

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CANARIES = "tests/fixtures/runtime_canaries.py"


def _cli(*args: str, cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "derivgraph.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


# ---- 3: one --format, --version, -v after the subcommand, errors on stderr, exit rule -------

@pytest.mark.parametrize("argv, formats", [
    (["demo"], {"text", "json"}),
    (["plan"], {"text", "json"}),
    (["specs"], {"text", "json"}),
    (["ops"], {"text", "json"}),
    (["bench"], {"text", "json"}),
    (["trace"], {"text", "json"}),
    (["graph", "x.yaml"], {"text", "dot", "mermaid"}),
    (["audit", "vllm"], {"text", "json"}),
    (["audit", "static", "x"], {"text", "json", "sarif"}),
    (["audit", "runtime", "--model", "m:f", "--reload", "m:g"], {"text", "json"}),
    (["audit", "capture", "--model", "m:f", "--forward", "m:g"], {"text", "json"}),
])
def test_every_command_takes_format_and_json_is_its_alias(argv, formats) -> None:
    parser = build_parser()
    for fmt in formats:
        assert parser.parse_args([*argv, "--format", fmt]).format == fmt
    assert parser.parse_args(argv).format == "text"
    if "json" in formats:
        assert parser.parse_args([*argv, "--json"]).format == "json"
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--format", "yaml"])


def test_version(capsys) -> None:
    from derivgraph import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"derivgraph {__version__}"


@pytest.mark.parametrize("argv", [["-v", "ops"], ["ops", "-v"], ["ops", "--verbose"],
                                  ["audit", "static", "x", "-v"]])
def test_verbose_before_or_after_the_subcommand(argv) -> None:
    assert build_parser().parse_args(argv).verbose is True
    assert build_parser().parse_args([a for a in argv if a not in ("-v", "--verbose")]
                                     ).verbose is False


def test_spec_errors_go_to_stderr_with_exit_1(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nspecs:\n  - name: x\n    target: {module_class: A}\n"
                   "    derived:\n      - {name: y, kind: attribute, formula: 'nosuchop(w)'}\n")
    done = _cli("validate", str(bad))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "DG" in done.stderr and "bad.yaml:6" in done.stderr


def test_runtime_audit_verdict_matches_its_exit_status() -> None:
    """FAIL is printed only when the command exits 1 (--strict); without it: FINDINGS, 0."""
    args = ("audit", "runtime", "--model", f"{CANARIES}:fold_factory", "--reload",
            f"{CANARIES}:fold_reload", "--repeat", "2", "--no-plan")
    report = _cli(*args)
    strict = _cli(*args, "--strict")
    assert report.returncode == 0 and strict.returncode == 1
    assert report.stdout.splitlines()[-1].startswith("FINDINGS: 1 path(s) changed")
    assert "FAIL" not in report.stdout
    assert strict.stdout.splitlines()[-1].startswith("FAIL: 1 path(s) changed")


# ---- 4: user mistakes get one line on stderr and exit 2, never a traceback ------------------

@pytest.mark.parametrize("argv, message", [
    (["plan", "--model", "nosuch:f"], "cannot import 'nosuch'"),
    (["trace", "--model", "nosuch:f"], "cannot import 'nosuch'"),
    (["plan", "--model", "my_models:post_load"], "--model needs a FACTORY() returning"),
    (["plan", "--model", "my_models:EXPERTS"], "not a callable FACTORY"),
    (["plan", "--model", "my_models:nothing"], "has no attribute 'nothing'"),
    (["demo", "--device", "cuda"], "--device cuda needs a CUDA GPU"),
])
def test_user_mistakes_are_one_error_line(argv, message) -> None:
    import torch

    if argv[:2] == ["demo", "--device"] and torch.cuda.is_available():
        pytest.skip("a GPU is present: --device cuda is no mistake here")
    done = _cli(*argv, cwd=EXAMPLES)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr


def test_audit_vllm_unknown_case_and_a_not_runnable_case_read_as_sentences() -> None:
    from vllm_integration.executable_audit import audit_cases as cases

    done = _cli("audit", "vllm", "--case", "no-such-case")
    assert done.returncode == 2 and done.stderr.strip().endswith(f"--list shows {len(cases())}")
    fp8 = next(c for c in cases() if c.name == "fp8-linear")
    reason = fp8.not_runnable() if callable(fp8.not_runnable) else ""
    assert "Current vLLM config is not set" not in (reason or "")


# ---- 5: quiet by default ------------------------------------------------------------------

def test_unmatched_builtin_specs_are_one_line_listed_under_verbose() -> None:
    quiet = _cli("plan", "--model", "my_models:build_a", "--specs", "my_specs.yaml",
                 cwd=EXAMPLES)
    assert quiet.returncode == 0, quiet.stderr
    lines = [ln for ln in quiet.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and len(lines[0]) < 200, quiet.stderr
    n = len(builtin_specs())  # every built-in spec misses MyModel; my_specs.yaml's one matches
    assert re.search(rf"\b{n} of {n + 1} spec\(s\) match no module of MyModel", lines[0])
    loud = _cli("plan", "--model", "my_models:build_a", "--specs", "my_specs.yaml", "-v",
                cwd=EXAMPLES)
    assert "vllm-cutlass-fp8-strides (specs/vllm_moe_cutlass.yaml:15)" in loud.stderr


def test_require_match_fails_on_a_spec_of_specs_matching_nothing(tmp_path) -> None:
    spec = tmp_path / "elsewhere.yaml"
    spec.write_text("version: 1\nspecs:\n  - name: elsewhere\n    target: {module_class: Nope}\n"
                    "    derived:\n      - {name: y, kind: attribute, formula: 'w * 2'}\n")
    assert _cli("plan", "--model", "my_models:build_a", "--specs", str(spec),
                cwd=EXAMPLES).returncode == 0
    done = _cli("plan", "--model", "my_models:build_a", "--specs", str(spec), "--require-match",
                cwd=EXAMPLES)
    assert done.returncode == 1
    assert "spec 'elsewhere' matches no module of MyModel" in done.stderr
    ok = _cli("plan", "--model", "my_models:build_a", "--specs", "my_specs.yaml",
              "--require-match", cwd=EXAMPLES)
    assert ok.returncode == 0, ok.stderr


def test_third_party_deprecation_noise_is_filtered() -> None:
    import logging

    from derivgraph.cli.common import _NOISE, quiet_third_party

    handler = logging.StreamHandler(io.StringIO())
    noisy = logging.getLogger("torch._opaque_base_test")
    noisy.addHandler(handler)
    try:
        quiet_third_party()
        assert _NOISE in handler.filters
        noisy.warning("torch._opaque_base is deprecated, use torch._custom_class_base instead")
        noisy.warning("a real warning")
        logging.getLogger("derivgraph.x").addHandler(handler)
        logging.getLogger("derivgraph.x").warning("ours: deprecated option")
        assert handler.stream.getvalue().splitlines() == ["a real warning",
                                                         "ours: deprecated option"]
    finally:
        noisy.removeHandler(handler)
        logging.getLogger("derivgraph.x").removeHandler(handler)


# ---- 6: outputs agree with themselves -----------------------------------------------------

def test_repeat_never_reports_a_value_difference_of_zero() -> None:
    done = _cli("audit", "runtime", "--model", f"{CANARIES}:fold_factory", "--reload",
                f"{CANARIES}:fold_reload", "--repeat", "2", "--no-plan")
    assert "value differs" in done.stdout
    assert "max |diff| 0)" not in done.stdout


def test_static_summary_counts_add_up() -> None:
    from derivgraph.audit.static.report import render_text
    from derivgraph.audit.static.scan import scan

    report = scan([str(ROOT / "tests" / "fixtures" / "static_corpus")], None, specs=[], jobs=1)
    text = render_text(report, use_rich=False)
    head = re.search(r"(\d+) sites: (\d+) undeclared error/warning, (\d+) with a computed name, "
                     r"(\d+) info, (\d+) declared", text)
    assert head, text[-600:]
    sites, und, dyn, info, dec = map(int, head.groups())
    assert sites == und + dyn + info + dec == len(report.findings)
    sev = re.search(r"undeclared by severity: error (\d+), warning (\d+); info (\d+)", text)
    assert int(sev.group(1)) + int(sev.group(2)) == und and int(sev.group(3)) == info
    cats = re.search(r"undeclared by category: (.*)", text).group(1)
    assert sum(int(n) for n in re.findall(r" (\d+)", " " + cats)) == und


def test_runtime_head_counts_a_fold_only_plan() -> None:
    from derivgraph.audit.runtime.oracle import OracleReport

    text = OracleReport(declared=0, plan=True, refilled=True, folds=1).render()
    assert "no spec matches" not in text and "0 declared derived tensor(s) and 1 fold(s)" in text
    assert "no spec matches" in OracleReport(plan=True).render()


# ---- 7: readable at any width -------------------------------------------------------------

@pytest.mark.parametrize("width", [80, 120, 200, 260])
def test_static_text_keeps_severity_and_file_line_whole(width) -> None:
    pytest.importorskip("rich")
    from derivgraph.audit.static.report import render_text
    from derivgraph.audit.static.scan import scan

    report = scan([str(ROOT / "tests" / "fixtures" / "static_corpus")], None, specs=[], jobs=1)
    text = render_text(report, width=width)
    for f in report.undeclared()[:20]:
        assert f.location in text, (width, f.location)
    assert "warnin " not in text and "severi " not in text
    assert all(len(line) <= width for line in text.splitlines() if "│" in line or "┃" in line)


# ---- 8: progress on a TTY only -------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_tty_and_is_silent_in_pipes_and_json() -> None:
    pytest.importorskip("rich")
    tty, pipe = _Tty(), io.StringIO()
    for stream, enabled in ((tty, True), (pipe, True), (_Tty(), False)):
        with progress("work", enabled=enabled, stream=stream) as step:
            step(1, 2, "case-a")
    assert "work" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_json_output_has_no_progress_on_stderr() -> None:
    done = _cli("trace", "--format", "json")
    assert done.returncode == 0
    json.loads(done.stdout)
    assert "━" not in done.stderr


# ---- 9: light commands ---------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["ops"], ["ops", "--format", "json"]])
def test_ops_imports_neither_torch_nor_the_static_audit(argv) -> None:
    """``--help`` is tests/cli/test_startup.py's; ``ops`` reads the committed op catalogue."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "derivgraph.cli", *argv],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "derivgraph.cli.app" in imported  # the log is real
    assert "torch" not in imported
    assert not any(m.startswith("derivgraph.audit.static.") for m in imported)
