"""Medians per tag of reload_pairs.sh's lines: naive/pass ratio, pass and naive ms; N of M."""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by: dict[str, list[dict]] = {"base": [], "mine": []}
for r in rows:
    by[r["tag"]].append(r)
for key in ("naive_over_pass", "pass_ms", "naive_ms"):
    b = statistics.median(r[key] for r in by["base"])
    m = statistics.median(r[key] for r in by["mine"])
    print(f"{key:18} base {b:8.3f}  mine {m:8.3f}")
wins = sum(m["naive_over_pass"] > b["naive_over_pass"] for b, m in zip(by["base"], by["mine"]))
print(f"mine's naive/pass above base's in {wins} of {min(map(len, by.values()))} pairs; "
      f"load1 {min(r['load1'] for r in rows):.2f}-{max(r['load1'] for r in rows):.2f}")
