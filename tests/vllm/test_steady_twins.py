"""The generated steady entries on the tiny vLLM Llama (``tests/fixtures/vllm_steady_twins.py``,
one harness, a mode per entry): each weights reloaded with the entry, then the same weights by
the library's path; every derived tensor and scalar (and, for the guard's restore, every guarded
tensor) bit-identical, the reports, the state the path leaves and the session's counters equal
(the script asserts each), and the entry ran on every reload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "fixtures" / "vllm_steady_twins.py"


def _run(mode: str, reloads: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_PLUGINS": "derivgraph",
           "DERIVGRAPH_SPECS": str(ROOT / "vllm_integration" / "tiny_llama.yaml")}
    env.pop("DERIVGRAPH_VLLM_MODE", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), mode, str(reloads)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_steady_refill_entry_matches_the_slow_path_on_vllm():
    out = _run("refill", 8)
    assert out["reloads"] == 8 and out["steady"] == 8  # never the slow path
    assert out["values"] == 8 * 13  # every derived tensor and scalar compared
    assert out["report"]["taken_from_engine"] == 4 and out["report"]["moved"] == []
    assert out["source"].startswith("# The steady refill entry")


def test_the_steady_restore_matches_the_library_s_on_vllm():
    out = _run("restore", 8)
    assert out["reloads"] == 8 and out["steady"] == 8  # never the library's restore
    assert out["values"] == 8 * 60  # every derived tensor, scalar and guarded tensor compared
    assert out["report"] == {"guarded": 3, "weights": 23, "restored": [], "copied_only": [],
                             "recapture": []}
    assert out["source"].startswith("# The guard's steady restore entry")
