"""Every finding of `derivgraph audit static --package vllm` (the measure script's in-process scan)
in the 15 drawn v15 files, with each one's verdict in the judged list when it has one (run after the
judged list was committed).

    PYTHONPATH=. python3 benchmarks/results/review21a/drawn_file_findings.py
"""
import json
from pathlib import Path

from derivgraph.audit.static.scan import scan

RES = Path(__file__).resolve().parents[3] / "tests" / "resources"
judged = json.loads((RES / "static_recall_outside_v15a_vllm_0.33.json").read_text())
body = judged["lists"]["file_draw_v15_judge_a"]
cands = body["candidates"]
findings = scan(package="vllm").findings
for f in body["drawn"]:
    print(f"== {f}")
    mine = sorted((x for x in findings if x.file == f), key=lambda x: x.line)
    if not mine:
        print("   (no finding of any severity)")
    for x in mine:
        near = [c for c in cands if c["file"] == f and c["attr"] == x.attr and abs(c["line"] - x.line) <= 3]
        verdict = ("judged " + ("REAL" if near[0]["real"] else "not real") + f" (:{near[0]['line']})"
                   if near else "not in the judged list")
        print(f"   :{x.line} {x.attr} {x.severity.value}{' declared' if x.declared else ''} | {verdict} | "
              f"{str(x.reason)[:160]}")
