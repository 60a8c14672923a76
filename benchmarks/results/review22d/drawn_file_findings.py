"""Every audit finding in the 15 drawn v16 files, from a saved `derivgraph audit static --format json`
report (standard library only).  Usage:
    PYTHONPATH=$PWD derivgraph audit static --package vllm --format json -o /tmp/review22d_audit.json
    python3 benchmarks/results/review22d/drawn_file_findings.py /tmp/review22d_audit.json
"""
import json
import sys
from pathlib import Path

RES = Path(__file__).resolve().parents[3] / "tests" / "resources"
drawn = json.loads((RES / "static_recall_file_v16_draw.json").read_text())["drawn"]
judged = json.loads((RES / "static_recall_outside_v16d_vllm_0.33.json").read_text())
real = {(c["file"], c["attr"], c["line"]) for c in judged["lists"]["file_draw_v16_judge_d"]["candidates"] if c["real"]}
report = json.loads(Path(sys.argv[1]).read_text())
for f in drawn:
    rows = sorted((x for x in report if x["file"] == f), key=lambda x: x["line"])
    print(f"== {f}: {len(rows)} findings")
    for x in rows:
        mark = " [judged real]" if any(r[0] == f and r[1] == x["attr"] and abs(r[2] - x["line"]) <= 3 for r in real) else ""
        print(f"  {x['line']:>5} {x['attr']:<28} {x['severity']:<7} {'declared' if x['declared'] else 'undeclared':<10} {x.get('rule_id') or ''} {x['function'] or ''}{mark}")
        print(f"        reason: {str(x['reason'])[:220]}")
