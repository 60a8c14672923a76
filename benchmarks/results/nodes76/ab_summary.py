"""Medians per tag of ab_scaling.sh's lines, and how many rounds this tree won."""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by = {t: {r["round"]: r for r in rows if r["tag"] == t} for t in ("base", "mine")}
rounds = sorted(set(by["base"]) & set(by["mine"]))
for k in ("compile_warm_s", "gc_young_objects", "gc_after_s", "compile_with_gc_s", "construct_s"):
    b = [by["base"][i][k] for i in rounds]
    m = [by["mine"][i][k] for i in rounds]
    wins = sum(y < x for x, y in zip(b, m))
    print(f"{k:22} base {statistics.median(b):10.4f}  mine {statistics.median(m):10.4f}  "
          f"mine lower {wins}/{len(rounds)}")
print("load1:", [round(r["load1"], 1) for r in rows])
