"""Per-pair deltas (mine - base, process s) of chosen phases in a pairs.jsonl, and how many
pairs mine was faster in.

    python pair_deltas.py pairs.jsonl > pairs.deltas.txt
"""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
base = [r for r in rows if r["tag"] == "base"]
mine = [r for r in rows if r["tag"] == "mine"]
for key in ("total_cpu", "build_graph", "  build: resolve / stamp", "  build: resolve_params",
            "  build: check_cycles", "  build: infer_shapes", "lower (all)"):
    deltas = [m[key] - b[key] for b, m in zip(base, mine)]
    print(f"{key.strip():24s} median delta {statistics.median(deltas):+.3f}  mine faster in "
          f"{sum(d < 0 for d in deltas)} of {len(deltas)}  "
          f"[{', '.join(f'{d:+.3f}' for d in deltas)}]")
