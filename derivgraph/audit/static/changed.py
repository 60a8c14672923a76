"""``--changed-since REF``: the Python files a change touched, from git."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from derivgraph.errors import ChangedFilesError

__all__ = ["changed_files"]

logger = logging.getLogger(__name__)


def _git(args: list[str], cwd: Path) -> str:
    git = shutil.which("git")
    if git is None:
        raise ChangedFilesError("--changed-since needs git on PATH")
    proc = subprocess.run([git, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ChangedFilesError(f"git {' '.join(args)} (in {cwd}) failed: "
                                f"{proc.stderr.strip() or proc.returncode}; check that REF "
                                "exists (fetch it in CI: `actions/checkout` with fetch-depth: 0)")
    return proc.stdout


def changed_files(ref: str, paths: Iterable[Path]) -> frozenset[Path]:
    """Resolved paths of the ``.py`` files changed (added, copied, modified or renamed) between
    ``ref``'s merge base with HEAD and the working tree, plus untracked ones, in the git
    repositories holding ``paths``."""
    out: set[Path] = set()
    tops: set[Path] = set()
    for path in paths:
        where = path if path.is_dir() else path.parent
        tops.add(Path(_git(["rev-parse", "--show-toplevel"], where).strip()))
    for top in sorted(tops):
        base = _git(["merge-base", ref, "HEAD"], top).strip()
        names = _git(["diff", "--name-only", "--diff-filter=ACMR", base, "--", "*.py"], top)
        names += _git(["ls-files", "--others", "--exclude-standard", "--", "*.py"], top)
        out.update((top / n).resolve() for n in names.splitlines() if n.strip())
    logger.info("--changed-since %s: %d changed Python files", ref, len(out))
    return frozenset(out)
