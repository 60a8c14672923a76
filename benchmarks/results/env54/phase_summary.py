"""Per-phase medians and per-pair deltas of phase_pairs.sh's JSON files (ARM=plain: the
stamping-off arm; default stamped).

    [ARM=plain] python3 phase_summary.py DIR [phase ...]
"""
import json
import os
import statistics
import sys
from pathlib import Path

root = Path(sys.argv[1])
arm = os.environ.get("ARM", "stamped")
keys = sys.argv[2:] or ["total", "evaluate", "adopt_or_allocate", "transaction",
                        "  lower: bit check (_mismatches)", "  lower: lower_steps",
                        "  lower: install (codegen)", "lower (all)"]
pairs = []
i = 1
while (root / f"base_{i}.json").exists() and (root / f"mine_{i}.json").exists():
    pairs.append(tuple(json.loads((root / f"{a}_{i}.json").read_text())[arm]
                       for a in ("base", "mine")))
    i += 1
print(f"{len(pairs)} pairs ({arm} arm, process s)")
for k in keys:
    b = [p[0].get(k, 0.0) for p in pairs]
    m = [p[1].get(k, 0.0) for p in pairs]
    d = [round(y - x, 4) for x, y in zip(b, m)]
    print(f"{k.strip():32s} base {statistics.median(b):.3f}  mine {statistics.median(m):.3f}  "
          f"deltas {d}  faster {sum(x < 0 for x in d)}/{len(d)}")
