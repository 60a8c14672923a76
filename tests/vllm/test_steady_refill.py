"""The steady refill entry on the tiny vLLM Llama (``tests/fixtures/vllm_steady_refill.py``):
alternating weights, each reload by the steady entry, then the same weights by the slow path;
every derived tensor and scalar bit-identical, reports, holder state and the session's counters
equal (the script asserts each), and the steady entry ran on every reload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "fixtures" / "vllm_steady_refill.py"


def test_the_steady_entry_matches_the_slow_path_on_vllm():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_PLUGINS": "derivgraph",
           "DERIVGRAPH_SPECS": str(ROOT / "vllm_integration" / "tiny_llama.yaml")}
    env.pop("DERIVGRAPH_VLLM_MODE", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "8"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["reloads"] == 8 and out["steady"] == 8  # never the slow path
    assert out["values"] == 8 * 13  # every derived tensor and scalar compared
    assert out["report"]["taken_from_engine"] == 4 and out["report"]["moved"] == []
    assert out["source"].startswith("# The steady refill entry")
