"""Subgroup recall for judge D's v16 list (standard library only):
    python3 benchmarks/results/review22d/subgroups.py
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


judged = json.loads((RES / "static_recall_outside_v16d_vllm_0.33.json").read_text())
result = json.loads((RES / "static_recall_outside_result_v16d_vllm_0.33.json").read_text())
cands = {(c["file"], c["line"], c["attr"]): c for c in judged["lists"]["file_draw_v16_judge_d"]["candidates"]}
sites = result["lists"]["file_draw_v16_judge_d"]["sites"]
rows = [(s, cands[(s["file"], s["line"], s["attr"])]) for s in sites]
audit_undeclared = lambda s: "declared" not in s["audit"]  # noqa: E731  (the audit's own label; a miss has none)
groups = {
    "all real sites": lambda s, c: True,
    "held out (not a key of v1..v15b)": lambda s, c: c["held_out"],
    "no spec declares (judge's reading of specs/*.yaml)": lambda s, c: not c["declared_by_spec"],
    "held out and undeclared (judge's reading)": lambda s, c: c["held_out"] and not c["declared_by_spec"],
    "not labelled declared by the audit (misses counted here)": lambda s, c: audit_undeclared(s),
    "not close calls": lambda s, c: not c["close_call"],
}
for name, f in groups.items():
    sel = [(s, c) for s, c in rows if f(s, c)]
    k = sum(s["found"] for s, _ in sel)
    print(f"{name}: {k}/{len(sel)} wilson95 {wilson(k, len(sel))}")
    for s, c in sel:
        print(f"    {s['file']}:{s['line']} {s['attr']} found={s['found']} audit={s['audit']}")
