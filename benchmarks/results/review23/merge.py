"""Merge the two judges' files of the fourteenth outside precision review into one judged sample.

    python3 benchmarks/results/review23/merge.py

Judge A's items (positions 0-19) and judge B's (20-39), static_precision_outside12_judged_{a,b}.json
under tests/resources as handed in on branches review23a/b, are merged by the thirteenth review's
``merge`` (benchmarks/results/review22/merge.py, loaded by path) into
static_precision_outside12_vllm_0.33.json with the totals they imply, readers included.
"""
import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "review22_merge", Path(__file__).resolve().parents[1] / "review22" / "merge.py")
assert _spec is not None and _spec.loader is not None
_review22 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_review22)

if __name__ == "__main__":
    print(json.dumps(_review22.merge(
        12, "ab", "dcbb707",
        ("two outside reviewers (fourteenth review, precision): A judged 0-19, B 20-39, each in "
         "its own worktree cut at the raw draw (03492bc); each was given the judging-rule "
         "section as an extracted file (not the review doc), and none read the rule code, the "
         "corpus fixtures, the rule descriptions, earlier verdicts or the other's file; each "
         "also judged the audit's own reader (right / weak / wrong) and derives_from"),
        ("PYTHONPATH=. python3 tests/resources/static_precision_draw.py --seed-file "
         "tests/resources/static_precision_seed_outside12.json"))))
