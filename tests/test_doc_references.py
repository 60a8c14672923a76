"""Every test, script, module and raw file README.md and docs/*.md name exists.

A guarantee is backed by the tests named after it; a renamed or never-committed file leaves it
backed by nothing (docs/coverage.md named ``tests/test_vllm_coverage.py``, docs/vllm-support.md
``tests/test_vllm_integration_*.py``: neither exists). Globs must match at least one file,
``{a,b}`` alternatives each, and ``FILE::name`` must define ``name``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.docblocks import ROOT, doc_files

_PATH = re.compile(r"(?<![\w/.-])((?:tests|benchmarks|scripts|examples|specs|derivgraph|"
                   r"vllm_integration)/[\w/.*{},-]*\.(?:py|sh|jsonl|json|yaml|txt|md|log|md5)(?:\.gz)?)"
                   r"(::[\w]+)?")
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


# ---- commits: "to reproduce, run it at commit X" needs X in the repository --------------------

_COMMIT = re.compile(r"`([0-9a-f]{7,12})`")
# named by a record of work that was never merged, whose branch is gone; the text must say so
_GONE = {"446cd20": "scan31 (BENCHMARKS.md, 'Static scan time (scan31)'): not merged"}


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def unknown_commits(text: str) -> list[str]:
    """Abbreviated commit ids in backticks (a letter and a digit in them) the repository lacks."""
    ids = {h for h in _COMMIT.findall(text) if re.search(r"[a-f]", h) and re.search(r"\d", h)}
    return sorted(h for h in ids - set(_GONE)
                  if _git("cat-file", "-e", f"{h}^{{commit}}").returncode)


def test_every_named_commit_is_in_the_repository() -> None:
    shallow = _git("rev-parse", "--is-shallow-repository")
    if shallow.returncode or shallow.stdout.strip() != "false":
        pytest.skip("not a full git checkout")
    texts = {p.name: p.read_text(encoding="utf-8") for p in [*doc_files(), ROOT / "BENCHMARKS.md"]}
    assert {name: bad for name, text in texts.items() if (bad := unknown_commits(text))} == {}
    assert unknown_commits("at `e387068`, not `0badc0de1`; `446cd20`") == ["0badc0de1"]  # canary
