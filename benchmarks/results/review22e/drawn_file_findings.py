"""After the judged list and the measure were committed: every audit finding (any severity) in the
15 v16 drawn files, read from the audit's JSON output, and the recall subgroups (held out,
undeclared) of the judge-E list with Wilson 95 % intervals. Standard library only.

    PYTHONPATH=$PWD python3 -c "import sys; from derivgraph.cli import main; \
      sys.argv=['derivgraph','audit','static','--package','vllm','--format','json', \
      '--output','/tmp/review22e_audit.json']; sys.exit(main())"
    python3 benchmarks/results/review22e/drawn_file_findings.py /tmp/review22e_audit.json
"""
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent


def wilson(k: int, n: int, z: float = 1.959964):
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


draw = json.loads((ROOT / "tests/resources/static_recall_file_v16_draw.json").read_text())["drawn"]
judged = json.loads((ROOT / "tests/resources/static_recall_outside_v16e_vllm_0.33.json").read_text())
result = json.loads((ROOT / "tests/resources/static_recall_outside_result_v16e_vllm_0.33.json").read_text())
findings = [f for f in json.loads(Path(sys.argv[1]).read_text()) if f["file"] in draw]
(HERE / "drawn_file_findings.json").write_text(json.dumps(findings, indent=1) + "\n")
print(f"== audit findings in the drawn files ({len(findings)}; file:line attr severity [declared] reason)")
for i, f in enumerate(draw, 1):
    rows = sorted((x for x in findings if x["file"] == f), key=lambda x: x["line"])
    print(f"-- {i} {f}: {len(rows)} findings")
    for x in rows:
        print(f"   {x['line']} {x['attr']} {x['severity']}{' declared' if x['declared'] else ''}: "
              f"{x['reason']}")

cands = {(c["file"], c["line"], c["attr"]): c
         for c in judged["lists"]["file_draw_v16_judge_e"]["candidates"]}
sites = result["lists"]["file_draw_v16_judge_e"]["sites"]
print("== subgroups (found / real, Wilson 95 %)")
groups = {
    "all": lambda c: True,
    "held_out": lambda c: c["held_out"],
    "undeclared (declared_by_spec false)": lambda c: not c["declared_by_spec"],
    "held_out and undeclared": lambda c: c["held_out"] and not c["declared_by_spec"],
    "not close call": lambda c: not c["close_call"],
    "undeclared, counting modular_kernel.py:524 as undeclared": lambda c: (
        not c["declared_by_spec"] or c["attr"] == "quant_config"),
}
for name, pred in groups.items():
    rows = [s for s in sites if pred(cands[(s["file"], s["line"], s["attr"])])]
    k = sum(s["found"] for s in rows)
    print(f"   {name}: {k}/{len(rows)} {wilson(k, len(rows))}")

print("== candidates judged not real with an audit finding of any severity (same attr within 3 lines)")
for c in cands.values():
    if c["real"]:
        continue
    for x in findings:
        if x["file"] == c["file"] and x["attr"] == c["attr"] and abs(x["line"] - c["line"]) <= 3:
            print(f"   {c['file']}:{c['line']} {c['attr']} -> {x['severity']}"
                  f"{' declared' if x['declared'] else ''} line {x['line']}")
