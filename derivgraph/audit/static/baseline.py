"""Baselines for the static audit: report only what a change adds (a CI gate).

A finding's fingerprint ignores its line and column (lines move with every edit): it hashes
the file, class, function, owner, attribute and category. A baseline is a report saved earlier
(``--format json`` or ``--format sarif``); :func:`mark_baseline` gives each finding a
:class:`BaselineState` (SARIF ``baselineState``): ``new`` when the baseline lacks its
fingerprint, ``unchanged`` when it holds it. With ``--baseline`` the text and JSON reports
list only new findings and ``--strict`` fails only on them; SARIF keeps every result with its
state so code scanning shows what is new.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from derivgraph.audit.static.finding import BaselineState, StaticFinding
from derivgraph.errors import BaselineError

__all__ = ["FINGERPRINT_KEY", "BaselineState", "fingerprint", "load_baseline", "mark_baseline"]

FINGERPRINT_KEY = "derivgraphSite/v1"
"""The SARIF ``partialFingerprints`` key that carries :func:`fingerprint`."""

_FIELDS = ("file", "cls", "function", "owner", "attr", "category")


def _digest(values: Mapping[str, Any]) -> str:
    key = "\0".join(str(values.get(k) or "") for k in _FIELDS)
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def fingerprint(finding: StaticFinding) -> str:
    """The line-independent identity of a finding."""
    return _digest({k: getattr(finding, k) for k in _FIELDS})


def load_baseline(path: Path) -> frozenset[str]:
    """The fingerprints of a saved JSON or SARIF report of the static audit."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline ({exc.strerror}); save one with "
                            "`derivgraph audit static ... --format json -o FILE`") from exc
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}:{exc.lineno}: not JSON ({exc.msg}); a baseline is a "
                            "`--format json` or `--format sarif` report") from exc
    if isinstance(data, list) and all(isinstance(r, dict) and "attr" in r for r in data):
        return frozenset(_digest(r) for r in data)
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        prints = set()
        for run in data["runs"]:
            for result in run.get("results", []):
                value = result.get("partialFingerprints", {}).get(FINGERPRINT_KEY)
                if value is None:
                    raise BaselineError(f"{path}: a SARIF result has no {FINGERPRINT_KEY} "
                                        "fingerprint; it was not written by this audit")
                prints.add(value)
        return frozenset(prints)
    raise BaselineError(f"{path}: neither a static-audit JSON report (a list of findings) nor "
                        "a SARIF log; save one with `--format json` or `--format sarif`")


def mark_baseline(findings: Iterable[StaticFinding],
                  baseline: frozenset[str]) -> list[StaticFinding]:
    """The findings, each with ``baseline_state`` set against ``baseline``."""
    return [dataclasses.replace(f, baseline_state=BaselineState.UNCHANGED
                                if fingerprint(f) in baseline else BaselineState.NEW)
            for f in findings]
