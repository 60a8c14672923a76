"""List the audit's findings (all severities) in the 20 drawn v18 files, next to judge E's verdicts.

Input: the JSON report of `derivgraph audit static --package vllm --format json --show-info`
(run from this worktree after the judged list was committed). Standard library only.

    python3 benchmarks/results/review23e/drawn_file_findings.py /tmp/review23e_audit.json > benchmarks/results/review23e/drawn_file_findings.out
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RES = ROOT / "tests" / "resources"

report = json.loads(Path(sys.argv[1]).read_text())
judged = json.loads((RES / "static_recall_outside_v18e_vllm_0.33.json").read_text())
body = judged["lists"]["file_draw_v18_judge_e"]
drawn = body["drawn"]
cands = body["candidates"]


def verdict(f):
    near = [c for c in cands if c["file"] == f["file"] and c["attr"] == f["attr"]
            and abs(c["line"] - f["line"]) <= 3]
    if not near:
        return "not in judge E's list"
    c = near[0]
    return ("judged REAL" if c["real"] else "judged not real") + f" (list line {c['line']})"


for path in drawn:
    rows = sorted((f for f in report if f["file"] == path), key=lambda f: f["line"])
    print(f"== {path}: {len(rows)} finding(s)")
    for f in rows:
        sev = f["severity"] + (" declared" if f["declared"] else "")
        print(f"  {f['line']:5d} {f['attr']:<32} {sev:<16} {verdict(f)} | {f['reason'][:110]}")
