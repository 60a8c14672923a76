"""The code base stays ruff-clean (the lint is part of the suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_clean():
    pytest.importorskip("ruff")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "derivgraph", "vllm_integration", "tests",
         "examples", "benchmarks", "scripts", "specs"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_never_imports_vllm():
    code = (
        "import sys, derivgraph, derivgraph.cli, derivgraph.planner,"
        " derivgraph.audit.runtime.census;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('vllm', 'flashinfer')];"
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
