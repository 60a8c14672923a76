"""Per-process steady state and carry of ab.sh's JSON files, as a table with the pairs' signs.

    python3 benchmarks/results/guard67/ab_table.py benchmarks/results/guard67/ab
"""

import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(out.glob("*.json")):
    label, k = f.stem.rsplit("_", 1)
    d = json.loads(f.read_text())
    rows.setdefault(int(k), {})[label] = d
print("pair | tree | off ms | plugin ms | paired us (ratio) | off>off ms | plugin>plugin ms "
      "| steady_state_delta_us (ratio) | carry_us | load after")
lower = {"steady": 0, "paired": 0, "carry": 0}
pairs = 0
for k in sorted(rows):
    for label in ("base", "mine"):
        d = rows[k].get(label)
        if d is None:
            continue
        bp = d["by_previous"]
        oo = bp["off after off"]["median_ms"]
        pp = bp["refill after refill"]["median_ms"]
        print(f"{k} | {label} | {d['vllm_off_ms']:.3f} | {d['vllm_plugin_ms']:.3f} | "
              f"{d['paired']['delta_us_median']:.1f} ({d['paired']['ratio_median']:.4f}) | "
              f"{oo:.3f} | {pp:.3f} | {d['steady_state_delta_us']:.1f} ({pp / oo:.4f}) | "
              f"{d['carry_us']:.1f} | {d['load_after'][0]}")
    if "base" in rows[k] and "mine" in rows[k]:
        pairs += 1
        b, m = rows[k]["base"], rows[k]["mine"]
        lower["steady"] += m["steady_state_delta_us"] < b["steady_state_delta_us"]
        lower["paired"] += m["paired"]["delta_us_median"] < b["paired"]["delta_us_median"]
        lower["carry"] += m["carry_us"] < b["carry_us"]
print(f"mine lower than base: steady state {lower['steady']} of {pairs}, paired "
      f"{lower['paired']} of {pairs}, carry {lower['carry']} of {pairs}")
