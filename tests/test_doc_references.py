"""Every test, script and raw file README.md and docs/*.md name exists.

A guarantee is backed by the tests named after it; a renamed or never-committed file leaves it
backed by nothing (docs/coverage.md named ``tests/test_vllm_coverage.py``, docs/vllm-support.md
``tests/test_vllm_integration_*.py``: neither exists). Globs must match at least one file,
``{a,b}`` alternatives each, and ``FILE::name`` must define ``name``.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docblocks import ROOT, doc_files

_PATH = re.compile(r"(?<![\w/.-])((?:tests|benchmarks|scripts|examples|specs)/[\w/.*{},-]*"
                   r"\.(?:py|sh|jsonl|json|yaml|txt|md|log|md5))(::[\w]+)?")
_PLACEHOLDER = re.compile(r"<\w+>|X\.py$")  # `.../static_recall_outside_<v>_...`, `explore/X.py`


def _expand(path: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", path)
    if m is None:
        return [path]
    return [q for alt in m.group(1).split(",")
            for q in _expand(path[:m.start()] + alt + path[m.end():])]


def missing_references(text: str, root: Path = ROOT) -> list[str]:
    """Paths (and ``::test`` names) a markdown text names that the tree lacks."""
    missing = []
    for m in _PATH.finditer(text):
        if _PLACEHOLDER.search(m.group(1)):
            continue
        for path in _expand(m.group(1)):
            found = (sorted(root.glob(path)) if "*" in path
                     else [root / path] * (root / path).exists())
            if not found:
                missing.append(path)
            elif m.group(2) and not any(
                    re.search(rf"def {re.escape(m.group(2)[2:])}\b", f.read_text(encoding="utf-8"))
                    for f in found):
                missing.append(path + m.group(2))
    return missing


def test_every_named_file_exists() -> None:
    problems = {str(p.relative_to(ROOT)): missing_references(p.read_text(encoding="utf-8"))
                for p in doc_files()}
    assert {k: v for k, v in problems.items() if v} == {}


def test_a_renamed_test_or_a_missing_raw_file_is_found() -> None:
    """Canaries: the two stale names this check was written for, and a moved test function."""
    text = ("`tests/test_vllm_coverage.py` checks it; (`tests/test_vllm_integration_*.py`); "
            "`tests/vllm/test_coverage.py`; `tests/vllm/specs/test_specs_*.py`; "
            "`benchmarks/results/s39/{scan_pairs,no_such}.txt`; "
            "`tests/cli/test_cli.py::test_demo_table` and `tests/cli/test_cli.py::test_gone`")
    assert missing_references(text) == [
        "tests/test_vllm_coverage.py", "tests/test_vllm_integration_*.py",
        "benchmarks/results/s39/no_such.txt", "tests/cli/test_cli.py::test_gone"]
