"""Per-pair deltas (mine - base) of one phase from phases_pairs.sh's JSON lines (each process
writes --runs lines; a pair is the i-th base line with the i-th mine line).

    python3 pair_deltas.py FILE.jsonl "install (codegen)" ["lower: lower_steps" ...]
"""

import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
base = [r for r in rows if r["label"] == "base"]
mine = [r for r in rows if r["label"] == "mine"]
for key in sys.argv[2:]:
    deltas = [round(m[key] - b[key], 3) for b, m in zip(base, mine)]
    print(f"{key:34} {deltas}  mine faster {sum(d < 0 for d in deltas)}/{len(deltas)}")  # noqa: T201
