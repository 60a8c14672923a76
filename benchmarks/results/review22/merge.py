"""Merge the three judges' files of the thirteenth outside precision review into one judged sample.

    python3 benchmarks/results/review22/merge.py

(``merge`` is also what later reviews' merge scripts call, by path.)

Each judge wrote a JSON list of items (static_precision_outside11_judged_{a,b,c}.json under
tests/resources, as handed in on branches review22a-c); this wraps each as
{"judge": X, "items": [...]} (items unchanged) and writes static_precision_outside11_vllm_0.33.json
with the totals the items imply, the judges' verdicts on the audit's own readers included
(right / weak / wrong).
"""
import importlib.util
import json
from collections import Counter
from pathlib import Path

R = Path(__file__).resolve().parents[3] / "tests" / "resources"
_spec = importlib.util.spec_from_file_location("measure", R / "static_recall_outside_measure.py")
assert _spec is not None and _spec.loader is not None
_measure = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_measure)  # the committed measure script's Wilson interval, by path
wilson = _measure.wilson


def judged_items(k: int, judges: str = "abc") -> list[dict]:
    """The judges' items of review file ``k``, in draw order; each judge's bare list is wrapped
    once as {"judge": X, "items": [...]} (items unchanged)."""
    out = []
    for j in judges:
        path = R / f"static_precision_outside{k}_judged_{j}.json"
        data = json.loads(path.read_text())
        if isinstance(data, list):
            data = {"judge": j, "items": data}
            path.write_text(json.dumps(data, indent=1) + "\n")
        out += data["items"]
    return sorted(out, key=lambda r: r["index"])


def merge(k: int, judges: str, rules_commit: str, judge: str, command: str) -> dict:
    """Write static_precision_outside{k}_vllm_0.33.json from the judges' files; return totals."""
    items = judged_items(k, judges)
    seed = json.loads((R / f"static_precision_seed_outside{k}.json").read_text())
    draw = json.loads((R / f"static_precision_outside{k}_draw.json").read_text())
    n = len(items)
    tp = sum(r["judgement"] == "TP" for r in items)
    tpw = sum(r["judgement"] == "TP" and r["weight_derived"] for r in items)
    tpc = sum(r["judgement"] == "TP" and not r["kernel_format_clause_only"] for r in items)
    readers = Counter(r["audit_reader_verdict"] for r in items)
    out = {
        "seed": seed["seed"], "n": seed["n"], "population": draw["population"], "vllm": "0.33.0",
        "rules_commit": rules_commit, "judge": judge,
        "rule": json.loads((R / "static_precision_outside10_vllm_0.33.json").read_text())["rule"],
        "command": command,
        "items": items,
        "totals": {
            "tp": tp, "fp": n - tp, "precision": round(tp / n, 4), "wilson95": wilson(tp, n),
            "tp_weight_derived": tpw, "precision_weight_derived": round(tpw / n, 4),
            "wilson95_weight_derived": wilson(tpw, n),
            "tp_without_kernel_format_clause": tpc,
            "precision_without_kernel_format_clause": round(tpc / n, 4),
            "wilson95_without_kernel_format_clause": wilson(tpc, n),
            "close_calls": sum(r["close_call"] for r in items),
            "audit_reader": {v: readers[v] for v in ("right", "weak", "wrong")},
            "audit_reader_right_wilson95": wilson(readers["right"], n),
            "derives_from_right": sum(bool(r["derives_from_right"]) for r in items),
        },
    }
    (R / f"static_precision_outside{k}_vllm_0.33.json").write_text(json.dumps(out, indent=1) + "\n")
    return out["totals"]


if __name__ == "__main__":
    print(json.dumps(merge(
        11, "abc", "3614d96",
        ("three outside reviewers (thirteenth review, precision): A judged 0-13, B 14-26, "
         "C 27-39, each in its own worktree cut at the raw draw (f43b165); each was given the "
         "judging-rule section as an extracted file (not the review doc), and none read the "
         "rule code, the corpus fixtures, the rule descriptions, earlier verdicts or the "
         "others' files; each also judged the audit's own reader (right / weak / wrong) and "
         "derives_from"),
        ("PYTHONPATH=. python3 tests/resources/static_precision_draw.py --seed-file "
         "tests/resources/static_precision_seed_outside11.json"))))
