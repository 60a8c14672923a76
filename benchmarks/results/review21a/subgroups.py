"""Subgroup figures of recall v15 judge A from the measured result and the judged list.

    python3 benchmarks/results/review21a/subgroups.py
"""
import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "measure", Path(__file__).resolve().parents[3] / "tests" / "resources"
    / "static_recall_outside_measure.py")
_measure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_measure)
wilson = _measure.wilson

RES = Path(__file__).resolve().parents[3] / "tests" / "resources"
judged = json.loads((RES / "static_recall_outside_v15a_vllm_0.33.json").read_text())
result = json.loads((RES / "static_recall_outside_result_v15a_vllm_0.33.json").read_text())
cands = {(c["file"], c["line"], c["attr"]): c
         for c in judged["lists"]["file_draw_v15_judge_a"]["candidates"] if c["real"]}
rows = result["lists"]["file_draw_v15_judge_a"]["sites"]
groups = {
    "all real sites": lambda c: True,
    "held out (not a key of v1..v14b)": lambda c: c["held_out"],
    "no spec declares": lambda c: not c["declared_by_spec"],
    "held out and undeclared": lambda c: c["held_out"] and not c["declared_by_spec"],
    "not close calls": lambda c: not c["close_call"],
    "close calls": lambda c: c["close_call"],
    "held out, not close calls": lambda c: c["held_out"] and not c["close_call"],
}
out = {}
for name, keep in groups.items():
    sel = [r for r in rows if keep(cands[(r["file"], r["line"], r["attr"])])]
    k = sum(r["found"] for r in sel)
    out[name] = {"found": k, "real": len(sel), "wilson95": wilson(k, len(sel))}
    print(f"{name:36s} {k:2d}/{len(sel):2d}  wilson95 {wilson(k, len(sel))}")
out["misses"] = [{"file": r["file"], "line": r["line"], "attr": r["attr"], "audit": r["audit"]}
                 for r in rows if not r["found"]]
for m in out["misses"]:
    print("miss:", m["file"], m["line"], m["attr"], "|", m["audit"])
(Path(__file__).parent / "subgroups.json").write_text(json.dumps(out, indent=1) + "\n")
