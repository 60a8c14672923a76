"""Summarize ab.sh's JSON files: per pair, base vs this tree (paired delta us median, ratio
plugin/off medians, steady-state delta), and how many pairs this tree's figure was lower.

    python3 benchmarks/results/vllm68b/ab_summary.py benchmarks/results/vllm68b/ab
"""
import json
import statistics
import sys
from pathlib import Path

d = Path(sys.argv[1])
keys = ("paired.delta_us_median", "plugin_over_off", "steady_state_delta_us")


def get(j, k):
    for part in k.split("."):
        j = j[part]
    return j


rows = {k: [] for k in keys}
for i in range(1, 100):
    b, m = d / f"base_{i}.json", d / f"mine_{i}.json"
    if not (b.exists() and m.exists()):
        break
    jb, jm = json.loads(b.read_text()), json.loads(m.read_text())
    print(f"pair {i}: " + "; ".join(f"{k} {get(jb, k)} -> {get(jm, k)}" for k in keys))
    for k in keys:
        rows[k].append((get(jb, k), get(jm, k)))
for k, v in rows.items():
    print(f"{k}: base median {statistics.median(a for a, _ in v):.3f}, mine median "
          f"{statistics.median(b for _, b in v):.3f}, mine lower in {sum(b < a for a, b in v)} "
          f"of {len(v)}")
