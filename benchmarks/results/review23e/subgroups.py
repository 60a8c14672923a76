"""Subgroups of judge E's v18 recall: all, held out, undeclared, held out and undeclared, not close calls.

Reads the judged list and the measure's result (static_recall_outside_result_v18e_vllm_0.33.json).
Standard library only; the Wilson interval is the measure script's formula.

    python3 benchmarks/results/review23e/subgroups.py > benchmarks/results/review23e/subgroups.out
"""
import json
import math
from pathlib import Path

RES = Path(__file__).resolve().parents[3] / "tests" / "resources"


def wilson(k, n, z=1.959964):
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


judged = json.loads((RES / "static_recall_outside_v18e_vllm_0.33.json").read_text())
result = json.loads((RES / "static_recall_outside_result_v18e_vllm_0.33.json").read_text())
cands = {(c["file"], c["line"], c["attr"]): c
         for c in judged["lists"]["file_draw_v18_judge_e"]["candidates"] if c["real"]}
sites = result["lists"]["file_draw_v18_judge_e"]["sites"]
groups = {
    "all real sites": lambda c: True,
    "held out (no key of v1..v17g within 3 lines)": lambda c: c["held_out"],
    "no spec declares (judge E's reading of specs/*.yaml)": lambda c: not c["declared_by_spec"],
    "held out and undeclared": lambda c: c["held_out"] and not c["declared_by_spec"],
    "not close calls": lambda c: not c["close_call"],
}
out = {}
for name, keep in groups.items():
    rows = [s for s in sites if keep(cands[(s["file"], s["line"], s["attr"])])]
    k = sum(s["found"] for s in rows)
    out[name] = {"found": k, "real": len(rows), "wilson95": wilson(k, len(rows)),
                 "sites": [f"{s['file']}:{s['line']} {s['attr']} -> {s['audit']}" for s in rows],
                 "misses": [f"{s['file']}:{s['line']} {s['attr']} -> {s['audit']}" for s in rows if not s["found"]]}
print(json.dumps(out, indent=1))
