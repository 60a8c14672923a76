"""Per-pair (base, mine) values and how many pairs mine is lower in, for chosen phases of a
``compile36/pairs.sh`` jsonl (rows alternate base, mine).

    python3 benchmarks/results/lower61/wins.py benchmarks/results/lower61/pairs.jsonl
"""

from __future__ import annotations

import json
import sys

PHASES = ["total_cpu", "lower (all)", "  bind: holders.bind", "  lower: bind_tensors",
          "  lower: lower_steps", "  lower: install (codegen)",
          "  lower: bit check (_mismatches)", "record_startup", "prepare (all)"]


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1])]
    base = [r for r in rows if r["tag"] == "base"]
    mine = [r for r in rows if r["tag"] != "base"]
    for phase in PHASES:
        pairs = [(b[phase], m[phase]) for b, m in zip(base, mine)]
        wins = sum(m < b for b, m in pairs)
        print(f"{phase.strip():32} {wins} of {len(pairs)}  {pairs}")  # noqa: T201


if __name__ == "__main__":
    main()
