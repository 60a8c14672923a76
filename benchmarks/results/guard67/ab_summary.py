"""Medians over the processes of ab.sh's JSON files and the pairs' signs (ab_summary.txt).

    python3 benchmarks/results/guard67/ab_summary.py benchmarks/results/guard67/ab
"""

import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
rows: dict[int, dict[str, tuple[float, float, float, float]]] = {}
for f in out.glob("*.json"):
    label, k = f.stem.rsplit("_", 1)
    d = json.loads(f.read_text())
    bp = d["by_previous"]
    ratio = bp["refill after refill"]["median_ms"] / bp["off after off"]["median_ms"]
    rows.setdefault(int(k), {})[label] = (d["steady_state_delta_us"], ratio,
                                          d["paired"]["delta_us_median"], d["carry_us"])
pairs = sorted(k for k in rows if len(rows[k]) == 2)
names = ("steady_state_delta_us", "steady ratio", "paired delta us", "carry_us")
for i, name in enumerate(names):
    base = [rows[k]["base"][i] for k in pairs]
    mine = [rows[k]["mine"][i] for k in pairs]
    lower = sum(m < b for b, m in zip(base, mine))
    print(f"{name}: median base {statistics.median(base):.4g}, mine {statistics.median(mine):.4g}"
          f"; mine lower in {lower} of {len(pairs)} pairs")
