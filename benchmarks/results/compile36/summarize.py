"""Medians per tag of pairs_100k.jsonl (stamped compile at 100k, process seconds per phase)."""

import json
import statistics
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by: dict[str, list[dict]] = defaultdict(list)
for r in rows:
    by[r["tag"]].append(r)
keys = [k for k in rows[0] if k != "tag"]
print(f"{'phase':34} {'base':>8} {'mine':>8}  (medians of {len(by['base'])} / {len(by['mine'])})")
for k in keys:
    b = statistics.median(r.get(k, 0.0) for r in by["base"])
    m = statistics.median(r.get(k, 0.0) for r in by["mine"])
    print(f"{k:34} {b:8.3f} {m:8.3f}")
print("pairs (base, mine) total_cpu:",
      [(a["total_cpu"], b["total_cpu"]) for a, b in zip(by["base"], by["mine"])])
