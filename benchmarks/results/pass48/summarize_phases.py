"""Medians per label of phases_pairs.sh's JSON lines, and the per-phase delta (mine - base).

    python3 summarize_phases.py FILE.jsonl
"""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by: dict[str, list[dict]] = {}
for r in rows:
    by.setdefault(r["label"], []).append(r)
keys = [k for k in rows[0] if k != "label"]
print(f"{'phase (process s, median)':34} {'base':>8} {'mine':>8} {'delta':>8}   n")  # noqa: T201
for k in keys:
    b = statistics.median(r[k] for r in by["base"])
    m = statistics.median(r[k] for r in by["mine"])
    print(f"{k:34} {b:8.3f} {m:8.3f} {m - b:+8.3f}   {len(by['base'])}/{len(by['mine'])}")  # noqa: T201
