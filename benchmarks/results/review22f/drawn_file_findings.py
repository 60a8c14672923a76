"""List every finding of the audit's JSON report (`derivgraph audit static --package vllm
--format json --show-info --show-declared -o FILE`) in the 20 drawn v17 files, and compute the
v17f subgroups from the measure's result and the judged list (stdlib only)."""
import json
import math
import sys


def wilson(k, n, z=1.959964):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(c - h, 4), round(c + h, 4)]


report = json.load(open(sys.argv[1]))
judged = json.load(open("tests/resources/static_recall_outside_v17f_vllm_0.33.json"))
lst = judged["lists"]["file_draw_v17_judge_f"]
res = json.load(open("tests/resources/static_recall_outside_result_v17f_vllm_0.33.json"))
rows = res["lists"]["file_draw_v17_judge_f"]["sites"]
found = {(r["file"], r["line"], r["attr"]): r["found"] for r in rows}
real = [c for c in lst["candidates"] if c["real"]]
print("== subgroups")
for name, sel in [("all real", lambda c: True), ("held out", lambda c: c["held_out"]),
                  ("undeclared (reviewer's reading)", lambda c: not c["declared_by_spec"]),
                  ("held out and undeclared", lambda c: c["held_out"] and not c["declared_by_spec"])]:
    s = [c for c in real if sel(c)]
    k = sum(found[(c["file"], c["line"], c["attr"])] for c in s)
    print(f"{name}: {k}/{len(s)} wilson95 {wilson(k, len(s)) if s else None}")
print("== misses and the audit's findings within 15 lines")
for c in real:
    if found[(c["file"], c["line"], c["attr"])]:
        continue
    print(f"MISS {c['file']}:{c['line']} {c['attr']}")
    for f in report:
        if f["file"] == c["file"] and abs(f["line"] - c["line"]) <= 15:
            print(f"   {f['line']} {f['attr']} {f['severity']}{' declared' if f['declared'] else ''}: {f['reason']}")
    same = [f for f in report if f["attr"] == c["attr"]]
    for f in same:
        print(f"   same attr elsewhere: {f['file']}:{f['line']} {f['severity']}{' declared' if f['declared'] else ''} via {f.get('via')}")
print("== every finding in the drawn files")
for path in lst["drawn"]:
    fs = sorted((f for f in report if f["file"] == path), key=lambda f: f["line"])
    print(f"-- {path}: {len(fs)}")
    for f in fs:
        print(f"   {f['line']} {f['attr']} {f['severity']}{' declared' if f['declared'] else ''}: {f['reason']}")
