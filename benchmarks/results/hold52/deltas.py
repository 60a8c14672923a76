"""Per-pair deltas (this tree minus base) of chosen phases of a pairs.jsonl (base, mine, ...).

    python benchmarks/results/hold52/deltas.py benchmarks/results/hold52/pairs.jsonl
"""

import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ["total_cpu", "  bind: holders.bind", "  lower: bind_tensors", "lower (all)",
        "  prepare: sources_intact", "  prepare: RefillTable", "prepare (all)", "record_startup"]
for key in keys:
    pairs = [(b[key], m[key]) for b, m in zip(rows[::2], rows[1::2])
             if b["tag"] == "base" and m["tag"] == "mine"]
    deltas = [round(m - b, 3) for b, m in pairs]
    print(f"{key.strip():24s} deltas {deltas}  mine faster {sum(d < 0 for d in deltas)}/{len(deltas)}")
