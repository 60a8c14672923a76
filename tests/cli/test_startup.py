"""The command line starts light: ``--help`` loads no torch, no static audit and no pydantic.

Each test runs ``python -X importtime -m derivgraph.cli ...`` in a fresh process and reads the
modules it imported from the ``-X importtime`` lines on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imported(*argv: str) -> set[str]:
    """The modules ``python -m derivgraph.cli *argv`` imports (from ``-X importtime``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "derivgraph.cli", *argv],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    modules = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the header line
                modules.add(name)
    assert "derivgraph.cli.app" in modules, "no -X importtime output parsed"
    return modules


def _loaded(modules: set[str], package: str) -> list[str]:
    return sorted(m for m in modules if m == package or m.startswith(package + "."))


@pytest.mark.parametrize("argv", [("--help",), ("audit", "--help"), ("audit", "static", "--help")])
def test_help_imports_no_torch_and_no_static_audit(argv):
    modules = _imported(*argv)
    assert _loaded(modules, "torch") == []
    assert _loaded(modules, "derivgraph.audit.static") == []
    assert _loaded(modules, "rich") == []
    assert _loaded(modules, "vllm_integration") == []


def test_cli_package_imports_no_pydantic():
    """Nothing under ``derivgraph.cli`` imports pydantic at module level (the package
    ``derivgraph`` itself is not the CLI's to keep light, see the next test)."""
    code = ("import sys, derivgraph; before = set(sys.modules);"
            "import derivgraph.cli; from derivgraph.cli import build_parser; build_parser();"
            "new = sorted(set(sys.modules) - before);"
            "bad = [m for m in new if m.split('.')[0] in ('pydantic', 'torch', 'yaml', 'rich')"
            " or m.startswith('derivgraph.audit.static') or m.startswith('derivgraph.spec')];"
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_help_imports_no_pydantic():
    assert _loaded(_imported("--help"), "pydantic") == []
