"""found/real with Wilson 95 % per subgroup, joining the judged list and the measure's result.

    python3 benchmarks/results/review21b/subgroups.py > benchmarks/results/review21b/subgroups.out
"""
import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "measure", "tests/resources/static_recall_outside_measure.py")
_measure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_measure)
wilson = _measure.wilson

judged = json.loads(Path("tests/resources/static_recall_outside_v15b_vllm_0.33.json").read_text())
result = json.loads(Path("tests/resources/static_recall_outside_result_v15b_vllm_0.33.json").read_text())
cands = {(c["file"], c["line"], c["attr"]): c
         for c in judged["lists"]["file_draw_v15_judge_b"]["candidates"] if c["real"]}
rows = []
for s in result["lists"]["file_draw_v15_judge_b"]["sites"]:
    c = cands[(s["file"], s["line"], s["attr"])]
    rows.append({**c, "found": s["found"], "audit": s["audit"]})

groups = {
    "all real sites": lambda r: True,
    "held out (not a key of v1..v14b)": lambda r: r["held_out"],
    "not held out": lambda r: not r["held_out"],
    "no spec declares (judge's reading of specs/*.yaml)": lambda r: not r["declared_by_spec"],
    "held out and undeclared": lambda r: r["held_out"] and not r["declared_by_spec"],
    "close call (real)": lambda r: r["close_call"],
    "not close call": lambda r: not r["close_call"],
}
for name, pred in groups.items():
    sel = [r for r in rows if pred(r)]
    k = sum(r["found"] for r in sel)
    w = wilson(k, len(sel))
    ws = f"{100 * w[0]:.1f} %-{100 * w[1]:.1f} %" if w else "n/a"
    print(f"{name:52s} {k}/{len(sel)}  Wilson 95 % {ws}")
print()
print("misses:")
for r in rows:
    if not r["found"]:
        print(f"  {r['file']}:{r['line']} {r['attr']} held_out={r['held_out']} "
              f"declared={r['declared_by_spec']} close_call={r['close_call']} | measure: {r['audit']}")
