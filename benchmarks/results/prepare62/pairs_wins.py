"""Per pair (base, mine) of the phases prepare holds, and in how many pairs mine is lower.

    python3 benchmarks/results/prepare62/pairs_wins.py PAIRS.jsonl
"""

from __future__ import annotations

import json
import sys

PHASES = ("prepare (all)", "  prepare: sources_intact", "  prepare: RefillTable", "total_cpu")


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1])]
    base = [r for r in rows if r["tag"] == "base"]
    mine = [r for r in rows if r["tag"] == "mine"]
    for phase in PHASES:
        pairs = [(b[phase], m[phase]) for b, m in zip(base, mine)]
        wins = sum(m < b for b, m in pairs)
        print(f"{phase.strip():28s} {wins} of {len(pairs)}  {pairs}")


if __name__ == "__main__":
    main()
