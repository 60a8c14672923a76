"""The fenced examples of README.md and docs/*.md, and the markers that say how each one runs.

Every fenced block is executed by ``tests/test_doc_examples.py`` according to its language:

* ``bash``: each command (``\\``-continued lines joined, comment lines dropped) runs in a
  sandbox of the repository (a temporary folder; files the commands write land there) and
  must exit 0;
* ``yaml``: a spec file, loaded and checked (``derivgraph validate``'s rules); compiled
  against a model when a ``model`` marker names one;
* ``python``: run in a subprocess (after a ``setup`` marker's code, if any);
* anything else (a block of output): must carry an ``output`` or ``skip`` marker.

Markers are HTML comments on the lines directly above the opening fence, one per line,
``<!-- doctest KEY -->`` or ``<!-- doctest KEY: VALUE -->``:

=========  ===========================================================================
key        meaning
=========  ===========================================================================
skip       not run; the value is the reason (required)
long       not run because it takes minutes; the value says how long and what covers it
gpu        needs a CUDA GPU; run only with ``pytest -m gpu``; the value is the reason
slow       run, as a test marked ``slow`` (CI runs it; ``-m 'not slow'`` skips it)
cwd        folder to run in, relative to the repository root (default: the root)
exit       expected exit status of each command, in order (one value: every command)
expect     text the commands' standard output must contain (repeatable)
output     a command whose standard output must contain every line of the block, in order
model      ``MODULE:FACTORY`` (resolved like the CLI's) to compile a YAML block against
fragment   ``derived``: the YAML block is a list of derived entries, checked inside a spec
setup      Python code run before a python block (repeatable)
=========  ===========================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["KEYS", "Block", "MarkerError", "command_lines", "doc_files", "parse_blocks"]

ROOT = Path(__file__).resolve().parents[1]
KEYS = frozenset({"skip", "long", "gpu", "slow", "cwd", "exit", "expect", "output", "model",
                  "fragment", "setup"})
_NEEDS_VALUE = KEYS - {"slow"}
_REPEATABLE = frozenset({"expect", "setup"})
_MARKER = re.compile(r"^<!--\s*doctest\s+([a-z]+)\s*(?::\s*(.*?))?\s*-->\s*$")
_FENCE = re.compile(r"^( {0,3})```([\w+-]*)\s*$")  # indented: a fence inside a list item


class MarkerError(ValueError):
    """A malformed, unknown or stray ``doctest`` marker."""


@dataclass
class Block:
    """One fenced block: where it is, its language, body and markers."""

    file: str
    line: int
    lang: str
    body: str
    markers: dict[str, list[str]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"

    def get(self, key: str, default: str | None = None) -> str | None:
        values = self.markers.get(key)
        return values[0] if values else default

    def not_run_reason(self) -> str | None:
        """Why the block is never run by the CPU test suite (``None``: it runs)."""
        for key in ("skip", "long"):
            if key in self.markers:
                return f"{key}: {self.get(key)}"
        return None


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def parse_blocks(text: str, file: str) -> list[Block]:
    """The fenced blocks of a markdown text with their markers; raises :class:`MarkerError`."""
    lines = text.splitlines()
    blocks: list[Block] = []
    pending: dict[str, list[str]] = {}
    pending_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _MARKER.match(line.strip())
        if marker is None and "<!-- doctest" in line:
            raise MarkerError(f"{file}:{i + 1}: malformed doctest marker: {line.strip()!r}")
        if marker is not None:
            key, value = marker.group(1), marker.group(2)
            if key not in KEYS:
                raise MarkerError(f"{file}:{i + 1}: unknown doctest marker {key!r} "
                                  f"(known: {', '.join(sorted(KEYS))})")
            if key in _NEEDS_VALUE and not value:
                raise MarkerError(f"{file}:{i + 1}: doctest marker {key!r} needs a value")
            if key in pending and key not in _REPEATABLE:
                raise MarkerError(f"{file}:{i + 1}: doctest marker {key!r} given twice")
            pending.setdefault(key, []).append(value or "")
            pending_line = pending_line or i + 1
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence is not None:
            indent = len(fence.group(1))
            end = i + 1
            while end < len(lines) and not lines[end].lstrip(" ").startswith("```"):
                end += 1
            if end == len(lines):
                raise MarkerError(f"{file}:{i + 1}: unclosed code fence")
            body = [b[indent:] if b[:indent].isspace() else b for b in lines[i + 1:end]]
            blocks.append(Block(file, i + 1, fence.group(2).lower(),
                                "\n".join(body) + "\n", pending))
            pending, pending_line = {}, 0
            i = end + 1
            continue
        if pending:
            raise MarkerError(f"{file}:{pending_line}: doctest marker not directly above a "
                              "code fence")
        i += 1
    if pending:
        raise MarkerError(f"{file}:{pending_line}: doctest marker not directly above a code fence")
    return blocks


def command_lines(body: str) -> list[str]:
    """The shell commands of a bash block: continuation lines joined, comment lines dropped."""
    commands: list[str] = []
    current = ""
    for raw in body.splitlines():
        line = raw.rstrip()
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        commands.append(current + line)
        current = ""
    if current:
        commands.append(current.rstrip())
    return commands
