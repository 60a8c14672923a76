"""List every audit finding (all severities, declared or not) in the 20 drawn v18 files.

Input: the JSON report of `derivgraph audit static --package vllm --format json --show-info
--show-declared --output FILE` (run after the judged list was committed). Standard library only.
"""
import json
import sys

draw = json.load(open("tests/resources/static_recall_file_v18_draw.json"))["drawn"]
findings = json.load(open(sys.argv[1]))
judged = json.load(open("tests/resources/static_recall_outside_v18d_vllm_0.33.json"))
cands = judged["lists"]["file_draw_v18_judge_d"]["candidates"]
for i, f in enumerate(draw, 1):
    hits = sorted((x for x in findings if x["file"] == f), key=lambda x: x["line"])
    print(f"{i:2d} {f}: {len(hits)} finding(s)")
    for x in hits:
        mine = [c for c in cands if c["attr"] == x["attr"] and abs(c["line"] - x["line"]) <= 3]
        tag = ("judged " + ("REAL" if mine[0]["real"] else "not real") + f" :{mine[0]['line']}") if mine else "not in my list"
        print(f"     {x['severity']:7s} {'declared' if x['declared'] else 'undeclared':10s} :{x['line']} {x['attr']} ({x['category']}; {x['reason']}) [{tag}]")
