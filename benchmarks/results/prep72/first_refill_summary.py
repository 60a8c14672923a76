"""Medians per tag of first_refill.sh's lines: first and steady refill (us), and N of M."""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by: dict[str, list[dict]] = {"base": [], "mine": []}
for row in rows:
    by[row["tag"]].append(row["r"])
for key in ("first_us", "second_us", "steady_us", "compile_ms"):
    b = statistics.median(r[key] for r in by["base"])
    m = statistics.median(r[key] for r in by["mine"])
    wins = sum(y[key] < x[key] for x, y in zip(by["base"], by["mine"]))
    print(f"{key:12} base {b:10.1f} mine {m:10.1f}  mine lower in {wins} of {len(by['mine'])}")
