"""Measure the static audit's recall on the outside review's held-out lists (judged first).

    PYTHONPATH=. python3 tests/resources/static_recall_outside_measure.py > result.json

Reads static_recall_outside_v1_vllm_0.33.json and static_recall_outside_v2_vllm_0.33.json (both
committed, with every candidate judged real or not, before the audit was run on them), runs
``derivgraph audit static --package vllm`` in-process with the built-in spec library, and counts
a real site as found when an error, a warning or a declared finding naming the same attribute in
the same file lies within 3 lines (the published rule). Prints per list found/real, the Wilson
95 % interval and, for each miss, what the audit reported near it (an info finding, or nothing).
``--lists`` measures other judged lists instead (the second outside review's v3 list).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAGES = ("v1", "v2")


def wilson(k: int, n: int, z: float = 1.959964) -> list[float] | None:
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Measure the static audit's recall on judged "
                                 "held-out lists.")
    ap.add_argument("--lists", nargs="+", metavar="JSON",
                    help="judged candidate lists to measure (default: the v1 and v2 lists)")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    paths = ([Path(p) for p in ns.lists] if ns.lists else
             [HERE / f"static_recall_outside_{stage}_vllm_0.33.json" for stage in STAGES])
    from derivgraph.audit.static.scan import scan
    from derivgraph.audit.static.semantics import Severity

    findings = scan(package="vllm").findings

    def near(c: dict, counted: bool) -> list:
        return [f for f in findings
                if f.file == c["file"] and f.attr == c["attr"] and abs(f.line - c["line"]) <= 3
                and (not counted or f.declared or f.severity is not Severity.INFO)]

    lists: dict[str, list[dict]] = {}
    for path in paths:
        stage = path.name.removeprefix("static_recall_outside_").removesuffix("_vllm_0.33.json")
        data = json.loads(path.read_text())
        for name, body in data["lists"].items():
            for c in body["candidates"]:
                if not c["real"]:
                    continue
                hit, seen = near(c, True), near(c, False)
                if hit:
                    f = hit[0]
                    got = f"{f.severity.value}{' declared' if f.declared else ''} line {f.line}"
                elif seen:
                    got = f"only info line {seen[0].line}: {seen[0].reason}"
                else:
                    got = "no finding"
                lists.setdefault(name, []).append(
                    {"stage": stage, "file": c["file"], "line": c["line"], "attr": c["attr"],
                     "found": bool(hit), "audit": got, "why_real": c["why"]})
    out = {"rule": "found: an error, a warning or a declared finding naming the attribute "
                   "within 3 lines", "lists": {}}
    for name, rows in lists.items():
        k = sum(r["found"] for r in rows)
        out["lists"][name] = {"found": k, "real": len(rows), "recall": round(k / len(rows), 4),
                              "wilson95": wilson(k, len(rows)), "sites": rows}
    allk = sum(v["found"] for v in out["lists"].values())
    alln = sum(v["real"] for v in out["lists"].values())
    out["all"] = {"found": allk, "real": alln, "wilson95": wilson(allk, alln)}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
