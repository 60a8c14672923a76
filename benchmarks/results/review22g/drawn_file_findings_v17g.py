"""Every finding the static audit (this worktree's rules) reports in the 20 v17 drawn files.

Run after the judged list was committed: PYTHONPATH=$PWD python3 benchmarks/results/review22g/drawn_file_findings_v17g.py
"""
import json

from derivgraph.audit.static.scan import scan

draw = json.load(open("tests/resources/static_recall_file_v17_draw.json"))["drawn"]
findings = scan(package="vllm").findings
for i, f in enumerate(draw, 1):
    hits = sorted((x for x in findings if x.file == f), key=lambda x: x.line)
    print(f"## {i} {f}: {len(hits)} findings")
    for x in hits:
        print(f"  {x.line} {x.attr} {x.severity.name} declared={x.declared}")
