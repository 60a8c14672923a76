"""Per-pair figures of a pairs.sh file: (base, mine) of a few phases, how often mine is lower.

    python3 benchmarks/results/adopt60/per_pair.py benchmarks/results/adopt60/pairs.jsonl
"""

from __future__ import annotations

import json
import sys

PHASES = ("total_cpu", "evaluate", "adopt_or_allocate", "entry_columns", "prepare (all)",
          "  prepare: RefillTable", "record_startup", "lower (all)")


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1])]
    pairs = list(zip(rows[0::2], rows[1::2]))
    assert all(b["tag"] == "base" and m["tag"] == "mine" for b, m in pairs)
    for phase in PHASES:
        got = [(b[phase], m[phase]) for b, m in pairs]
        lower = sum(m < b for b, m in got)
        print(f"{phase.strip():22s} mine lower {lower} of {len(got)}: {got}")


if __name__ == "__main__":
    main()
