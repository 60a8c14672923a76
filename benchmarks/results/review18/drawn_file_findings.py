"""Every audit finding (any severity) in the 12 drawn files, marked with the judged key it matches."""
import json
from pathlib import Path

from derivgraph.audit.static.scan import scan

R = Path("tests/resources")
drawn = json.loads((R / "static_recall_file_v14_draw.json").read_text())["drawn"]
cands = json.loads((R / "static_recall_outside_v14_vllm_0.33.json").read_text())["lists"]["file_draw"]["candidates"]
for f in sorted(scan(package="vllm").findings, key=lambda f: (drawn.index(f.file) if f.file in drawn else 99, f.line)):
    if f.file not in drawn:
        continue
    m = [c for c in cands if c["file"] == f.file and c["attr"] == f.attr and abs(c["line"] - f.line) <= 3]
    tag = ("judged real" if m[0]["real"] else "judged not real") if m else "NOT ON THE LIST"
    print(drawn.index(f.file) + 1, f.file.split("/")[-1], f.line, f.attr, f.severity.value,
          "declared" if f.declared else "", "|", tag)
