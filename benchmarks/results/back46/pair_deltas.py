"""Per-pair deltas (mine - base) of each phase of a pairs.jsonl (compile36/pairs.sh): the
median delta and in how many pairs this tree was faster.

    python3 benchmarks/results/back46/pair_deltas.py benchmarks/results/back46/pairs.jsonl
"""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
base = [r for r in rows if r.get("tag") == "base"]
mine = [r for r in rows if r.get("tag") == "mine"]


def phases(row):
    return row.get("phases", row)


for key, value in phases(base[0]).items():
    if not isinstance(value, (int, float)) or key in ("size", "repeat"):
        continue
    deltas = [phases(m)[key] - phases(b)[key] for b, m in zip(base, mine)]
    faster = sum(d < 0 for d in deltas)
    print(f"{key:36s} median delta {statistics.median(deltas):+.3f} s  "
          f"faster {faster}/{len(deltas)}  {[round(d, 3) for d in deltas]}")
