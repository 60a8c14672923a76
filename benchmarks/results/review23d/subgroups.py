"""Subgroup figures (held out; undeclared) of the v18d result, with Wilson 95 % intervals. Stdlib only."""
import json
import math

res = json.load(open("tests/resources/static_recall_outside_result_v18d_vllm_0.33.json"))
lst = json.load(open("tests/resources/static_recall_outside_v18d_vllm_0.33.json"))
cands = {(c["file"], c["line"], c["attr"]): c for c in lst["lists"]["file_draw_v18_judge_d"]["candidates"]}


def wilson(k, n, z=1.959964):
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


sites = res["lists"]["file_draw_v18_judge_d"]["sites"]
groups = {
    "all real": lambda c: True,
    "held out": lambda c: c["held_out"],
    "undeclared (no spec declares)": lambda c: not c["declared_by_spec"],
    "held out and undeclared": lambda c: c["held_out"] and not c["declared_by_spec"],
    "not close calls": lambda c: not c["close_call"],
}
for name, pred in groups.items():
    rows = [s for s in sites if pred(cands[(s["file"], s["line"], s["attr"])])]
    k = sum(s["found"] for s in rows)
    print(f"{name}: {k}/{len(rows)} wilson95 {wilson(k, len(rows))}")
    for s in rows:
        print(f"    {s['file']}:{s['line']} {s['attr']} found={s['found']} audit={s['audit']}")
