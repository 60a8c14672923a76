"""SARIF 2.1.0 output of the static audit (for GitHub code scanning and SARIF viewers).

One run; one rule per category (``DGS001``...). Undeclared sites are results of kind ``fail``
whose ``level`` is the finding's severity (``error``, ``warning``, or ``note`` for ``info``,
which the engine's reload handles); declared sites are kept as kind ``pass`` (level ``none``)
so a viewer can show what the spec library covers. ``properties`` carry the severity, the
store, the consequence, the fix, the stable key and the executable audit's verdict. Paths are
relative to ``%SRCROOT%`` (the working directory) or ``%PKGROOT%`` (the folder holding a
``--package``), given in ``originalUriBaseIds``.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

from derivgraph.audit.static.baseline import FINGERPRINT_KEY, fingerprint
from derivgraph.audit.static.finding import StaticFinding, StaticReport
from derivgraph.audit.static.sites import CATEGORIES

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "to_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "derivgraph-static-audit"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _rules() -> list[dict[str, Any]]:
    return [{
        "id": c.rule_id,
        "name": "".join(part.capitalize() for part in c.id.split("-")),
        "shortDescription": {"text": c.title},
        "fullDescription": {"text": c.risk},
        "help": {
            "text": f"{c.risk}. Declare the tensor in a derivgraph spec (the result's "
                    "properties.suggestion holds a skeleton) so it is allocated once and refilled "
                    "in place on every reload.",
        },
        "defaultConfiguration": {"level": "warning"},
        "properties": {"category": c.id, "tags": ["derivgraph", "weight-reload", c.id]},
    } for c in CATEGORIES.values()]


def _uri(path: str) -> str:
    return urllib.parse.quote(path, safe="/")


def _result(f: StaticFinding, rule_index: dict[str, int]) -> dict[str, Any]:
    where = f"{f.cls}.{f.function.rsplit('.', 1)[-1]}" if f.cls else f.function
    if f.declared:
        text = f"`{f.owner}.{f.attr}` is declared by spec `{f.spec}` ({f.reason})."
    else:
        text = (f"`{f.owner}.{f.attr}` in {where}: {f.reason}. {f.consequence[:1].upper()}"
                f"{f.consequence[1:]}. Fix: {f.fix}. No derivgraph spec declares it.")
    location: dict[str, Any] = {"uri": _uri(f.file)}
    if Path(f.file).is_absolute():
        location = {"uri": Path(f.file).as_uri()}
    elif f.root:
        location["uriBaseId"] = f.root
    result: dict[str, Any] = {
        "ruleId": f.rule_id,
        "ruleIndex": rule_index[f.category],
        "kind": "pass" if f.declared else "fail",
        "level": "none" if f.declared else _LEVELS[f.severity.value],
        "message": {"text": text},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": location,
                "region": {"startLine": f.line, "startColumn": f.col + 1},
            },
            "logicalLocations": [{"fullyQualifiedName": f.function, "kind": "function"}],
        }],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(f)},
        "properties": {
            "attr": f.attr, "category": f.category, "declared": f.declared, "spec": f.spec,
            "cls": f.cls, "function": f.function, "owner": f.owner, "kind": f.kind,
            "expression": f.expr, "via": list(f.via), "severity": f.severity.value,
            "store": f.store, "consequence": f.consequence, "fix": f.fix,
            "key": list(f.key), "verdict": f.verdict.value, "reader": f.reader,
            "readerKind": f.reader_kind, "derivesFrom": f.derives_from, "evidence": f.evidence,
        },
    }
    if f.baseline_state is not None:
        result["baselineState"] = f.baseline_state.value
    if f.suggestion:
        result["properties"]["suggestion"] = f.suggestion
    return result


def to_sarif(report: StaticReport, tool_version: str = "") -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log (a JSON-ready dict)."""
    rule_index = {c.id: i for i, c in enumerate(CATEGORIES.values())}
    driver: dict[str, Any] = {"name": TOOL_NAME, "rules": _rules()}
    if tool_version:
        driver["version"] = tool_version
    bases = {name: {"uri": Path(path).resolve().as_uri().rstrip("/") + "/"}
             for name, path in report.roots.items()}
    notifications = [{"level": "warning", "message": {"text": e}} for e in report.errors]
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "results": [_result(f, rule_index) for f in report.findings],
        "invocations": [{
            "executionSuccessful": not report.nothing_scanned,
            "toolExecutionNotifications": notifications,
        }],
        "properties": {
            "filesScanned": report.files_scanned, "filesAudited": report.files_audited,
            "bySeverity": dict(report.by_severity()),
            "specs": report.specs, "undeclared": len(report.undeclared()),
            "declared": len(report.declared()),
        },
    }
    if bases:
        run["originalUriBaseIds"] = bases
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
