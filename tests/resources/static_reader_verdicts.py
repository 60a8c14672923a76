"""Carry the outside reviews' verdicts on the audit's readers onto a current report.

    PYTHONPATH=. python3 tests/resources/static_reader_verdicts.py [--report JSON] SAMPLE...

A judged precision sample (e.g. ``static_precision_outside11_vllm_0.33.json``) holds, per item,
the reader the audit named when it was judged (``audit_reader``), the judge's verdict on it
(``audit_reader_verdict``: right / weak / wrong) and the judge's own reader line
(``reader_quote``). This script re-counts those verdicts for the readers a report names now; it
judges nothing new.

The rule (published with the script, applied to every item the same way):

- **kept**: the current reader is the judged one (same file, same statement, by
  ``static_reader_agreement.agree``): the judge's verdict stands.
- **moved to the judge's line**: the reader changed and now agrees with the judge's own reader
  line: counted right.
- **moved elsewhere**: the reader changed to a line no judge has read: counted ``unjudged``.
- **lost**: the report has no finding or no reader for the site: counted ``lost``.

Prints JSON per sample: the totals (right / weak / wrong / unjudged / lost) and one row per item.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from tests.resources import static_reader_agreement as agreement

VERDICTS = ("right", "weak", "wrong", "unjudged", "lost")


def carried_verdict(item: dict, reader: str | None, root: Path) -> tuple[str, str]:
    """``(verdict, how)`` for one judged item given the reader a report names now."""
    now = agreement.audit_location(reader)
    if now is None:
        return "lost", "no reader"
    judged = agreement.audit_location(item["audit_reader"])
    if judged is not None and agreement.agree(now, judged, root):
        return item["audit_reader_verdict"], "kept"
    if agreement.agree(now, agreement.review_location(item["reader_quote"]), root):
        return "right", "moved to the judge's line"
    return "unjudged", "moved elsewhere"


def recount(sample: dict, findings: list[dict], root: Path) -> dict:
    """The verdict of every judged item of ``sample`` for the readers in ``findings``."""
    by_site = {(f["file"], int(f["line"]), f["attr"]): f for f in findings}
    rows = []
    for item in sample["items"]:
        found = by_site.get((item["file"], int(item["line"]), item["attr"]))
        reader = found.get("reader") if found else None
        verdict, how = carried_verdict(item, reader, root)
        site = f"{item['file']}:{item['line']} {item['attr']}"
        rows.append({"index": item["index"], "site": site,
                     "judged": item["audit_reader_verdict"], "verdict": verdict, "how": how,
                     "reader": reader})
    counts = Counter(r["verdict"] for r in rows)
    return {"totals": {v: counts.get(v, 0) for v in VERDICTS}, "items": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("samples", nargs="+", help="judged samples with audit_reader_verdict")
    ap.add_argument("--report", help="a saved `audit static --format json` report")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    root = agreement.vllm_root()
    if root is None:
        print("vLLM is not installed", file=sys.stderr)
        return 2
    findings = agreement.report_findings(ns.report)
    out = {Path(s).name: recount(json.loads(Path(s).read_text()), findings, root)
           for s in ns.samples}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
