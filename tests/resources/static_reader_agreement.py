"""Compare the static audit's reader with the outside reviewer's reader on a judged sample.

    PYTHONPATH=. python3 tests/resources/static_reader_agreement.py [--report JSON] [--sample JSON]

The judged sample (default static_precision_outside4_vllm_0.33.json) holds, per finding, the
reader an outside reviewer found by reading vLLM's source (``reader_quote``: ``file:line
text``). The audit's reader is taken from a report of ``derivgraph audit static --package vllm
--format json`` (``--report``, e.g. one made on another tree) or from a scan run in-process.
The finding is the one with the sample's file, line and attribute.

The matching rule (published before any reader rule was changed): the two readers **agree** when
they name the same file and their lines belong to the same statement of that file's installed
source: the same line, or two lines of one statement that spans lines (a call whose arguments
run over several lines). For a compound statement (``if``, ``for``, ``with``, ``def``...) only
its header counts, never its body: ``if self.x is None:`` does not agree with a kernel call in
the block under it. A finding the report lacks, or reports without a reader, disagrees.

Prints JSON: the agreement count, the total, and one row per item (``agree``, both readers).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "static_precision_outside4_vllm_0.33.json"

_AUDIT_READER = re.compile(r"^\S+ (\S+?):(\d+) in ")
_REVIEW_READER = re.compile(r"^(\S+?):(\d+)[: ]")


def vllm_root() -> Path | None:
    """The directory that holds the installed ``vllm`` package, or None."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent


def audit_location(reader: str | None) -> tuple[str, int] | None:
    """``(file, line)`` of an audit reader (``"forward vllm/x.py:12 in C.f: text"``)."""
    m = _AUDIT_READER.match(reader or "")
    return (m.group(1), int(m.group(2))) if m else None


def review_location(quote: str) -> tuple[str, int]:
    """``(file, line)`` of a reviewer's quote (``"vllm/x.py:12 text"``)."""
    m = _REVIEW_READER.match(quote)
    if m is None:
        raise ValueError(f"not a file:line quote: {quote!r}")
    return m.group(1), int(m.group(2))


@functools.cache
def statement_spans(path: str) -> tuple[tuple[int, int], ...]:
    """The line span each statement of a file owns: a simple statement its whole extent, a
    compound statement only its header (up to the line before its first inner statement)."""
    tree = ast.parse(Path(path).read_text())
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        inner = [c for f in ("body", "orelse", "finalbody", "handlers", "cases")
                 for c in getattr(node, f, ()) or ()]
        end = node.end_lineno or node.lineno
        if inner:
            end = max(node.lineno, min(c.lineno for c in inner) - 1)
            if getattr(node, "decorator_list", None):
                end = max(end, node.lineno)
        spans.append((node.lineno, end))
    return tuple(spans)


def statement_of(path: str, line: int) -> tuple[int, int]:
    """The span of the innermost statement owning ``line`` (the line itself if none)."""
    owning = [s for s in statement_spans(path) if s[0] <= line <= s[1]]
    return min(owning, key=lambda s: s[1] - s[0]) if owning else (line, line)


def agree(audit: tuple[str, int] | None, review: tuple[str, int], root: Path) -> bool:
    """The published matching rule (module docstring)."""
    if audit is None or audit[0] != review[0]:
        return False
    if audit[1] == review[1]:
        return True
    path = str(root / audit[0])
    return statement_of(path, audit[1]) == statement_of(path, review[1])


def compare(sample: dict, findings: list[dict], root: Path) -> dict:
    """The agreement of each judged item with the finding the report holds for it."""
    by_site = {(f["file"], f["line"], f["attr"]): f for f in findings}
    rows = []
    for item in sample["items"]:
        found = by_site.get((item["file"], item["line"], item["attr"]))
        reader = found.get("reader") if found else None
        review = review_location(item["reader_quote"])
        rows.append({
            "index": item["index"], "site": f"{item['file']}:{item['line']} {item['attr']}",
            "agree": agree(audit_location(reader), review, root),
            "audit": reader, "severity": found.get("severity") if found else None,
            "review": item["reader_quote"],
        })
    return {"agree": sum(r["agree"] for r in rows), "total": len(rows), "items": rows}


def report_findings(report: str | None) -> list[dict]:
    """Findings as dicts: from a saved JSON report, or from a scan run in-process."""
    if report:
        data = json.loads(Path(report).read_text())
        return data["findings"] if isinstance(data, dict) else data
    from derivgraph.audit.static.scan import scan

    return [f.as_json() for f in scan(package="vllm").findings]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--report", help="a saved `audit static --format json` report")
    ap.add_argument("--sample", default=str(SAMPLE), help="the judged sample")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    root = vllm_root()
    if root is None:
        print("vLLM is not installed", file=sys.stderr)
        return 2
    result = compare(json.loads(Path(ns.sample).read_text()), report_findings(ns.report), root)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
