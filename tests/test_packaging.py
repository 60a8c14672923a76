"""The wheel ships the spec library, the reference examples and the entry points."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contents(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("derivgraph-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    for spec in sorted((ROOT / "specs").glob("*.yaml")):
        assert f"derivgraph/spec_library/{spec.name}" in names
    assert "derivgraph/tools/specs/reference.yaml" in names
    assert "derivgraph/spec/schema/spec.schema.json" in names
    assert "derivgraph/spec/schema/ops.json" in names  # validate's torch-free op catalogue
    for module in sorted((ROOT / "derivgraph").rglob("*.py")):  # every subpackage ships
        rel = module.relative_to(ROOT).as_posix()
        if not rel.startswith(("derivgraph/spec_library/", "derivgraph/examples/")):
            assert rel in names, f"{rel} is missing from the wheel (pyproject packages)"
    assert "vllm_integration/plugin.py" in names
    # `derivgraph bench --workload vllm` runs the tiny Llama with its specs from the wheel
    assert {"vllm_integration/reload_bench.py", "vllm_integration/tiny_llama.py",
            "vllm_integration/tiny_llama.yaml"} <= names
    assert "derivgraph = derivgraph.cli:main" in entry_points
    assert "derivgraph = vllm_integration.plugin:register" in entry_points
