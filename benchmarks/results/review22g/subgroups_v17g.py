"""Subgroup recall of the v17g judged list from the measure output (stdlib only).

python3 benchmarks/results/review22g/subgroups_v17g.py
"""
import json
import math


def wilson(k, n, z=1.959964):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return round(c - h, 4), round(c + h, 4)


lst = json.load(open("tests/resources/static_recall_outside_v17g_vllm_0.33.json"))
res = json.load(open("tests/resources/static_recall_outside_result_v17g_vllm_0.33.json"))
judged = {(c["file"], c["line"], c["attr"]): c
          for c in lst["lists"]["file_draw_v17_judge_g"]["candidates"] if c["real"]}
sites = res["lists"]["file_draw_v17_judge_g"]["sites"]
rows = {
    "all real sites": lambda c: True,
    "held out": lambda c: c["held_out"],
    "not held out": lambda c: not c["held_out"],
    "no spec declares (judge's reading)": lambda c: not c["declared_by_spec"],
    "declared (judge's reading)": lambda c: c["declared_by_spec"],
    "held out and undeclared": lambda c: c["held_out"] and not c["declared_by_spec"],
    "close call (real)": lambda c: c["close_call"],
}
for name, pred in rows.items():
    sel = [s for s in sites if pred(judged[(s["file"], s["line"], s["attr"])])]
    k, n = sum(s["found"] for s in sel), len(sel)
    lo, hi = wilson(k, n) if n else (None, None)
    print(f"{name}: {k}/{n} wilson95 [{lo}, {hi}]")
    for s in sel:
        if not s["found"]:
            print(f"   miss {s['file']}:{s['line']} {s['attr']} | audit: {s['audit']}")
