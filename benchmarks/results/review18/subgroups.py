"""Split the v14 measure result by held_out and declared_by_spec (fields of the judged list)."""
import importlib.util
import json
import sys
from pathlib import Path

R = Path(__file__).resolve().parents[3] / "tests" / "resources"
_spec = importlib.util.spec_from_file_location("measure", R / "static_recall_outside_measure.py")
_measure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_measure)
wilson = _measure.wilson  # the measure script's own Wilson interval
judged = json.loads((R / "static_recall_outside_v14_vllm_0.33.json").read_text())
result = json.loads((R / "static_recall_outside_result_v14_vllm_0.33.json").read_text())
meta = {(c["file"], c["line"], c["attr"]): c for c in judged["lists"]["file_draw"]["candidates"]}
rows = result["lists"]["file_draw"]["sites"]
groups = {
    "all": lambda c: True,
    "held_out": lambda c: c["held_out"],
    "undeclared": lambda c: not c["declared_by_spec"],
    "held_out_and_undeclared": lambda c: c["held_out"] and not c["declared_by_spec"],
}
out = {}
for name, keep in groups.items():
    sel = [r for r in rows if keep(meta[(r["file"], r["line"], r["attr"])])]
    k = sum(r["found"] for r in sel)
    out[name] = {"found": k, "real": len(sel), "wilson95": wilson(k, len(sel)),
                 "sites": [f"{r['file']}:{r['line']} {r['attr']} -> {r['audit']}" for r in sel]}
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
