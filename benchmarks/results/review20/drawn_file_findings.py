"""Every static-audit finding in the 15 v14b drawn files (run after the judged list, 10eb425).

    PYTHONPATH=. python3 benchmarks/results/review20/drawn_file_findings.py
"""
import json
from pathlib import Path

from derivgraph.audit.static.scan import scan

HERE = Path("tests/resources")
drawn = json.loads((HERE / "static_recall_file_v14b_draw.json").read_text())["drawn"]
judged = json.loads((HERE / "static_recall_outside_v14b_vllm_0.33.json").read_text())
cands = judged["lists"]["file_draw_untouched"]["candidates"]
findings = [f for f in scan(package="vllm").findings if f.file in set(drawn)]
print(f"findings in the {len(drawn)} drawn files: {len(findings)}")
for f in sorted(findings, key=lambda f: (drawn.index(f.file), f.line)):
    near = [c for c in cands if c["file"] == f.file and c["attr"] == f.attr
            and abs(c["line"] - f.line) <= 3]
    verdict = ("judged " + ("real" if near[0]["real"] else "not real") + f" (:{near[0]['line']})"
               if near else "not in the judged list")
    print(f"{f.file}:{f.line} {f.attr} {f.severity.value}{' declared' if f.declared else ''}"
          f" | {verdict} | {f.reason}")
per_file = {d: sum(f.file == d for f in findings) for d in drawn}
print(json.dumps(per_file, indent=1))
