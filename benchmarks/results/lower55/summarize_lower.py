"""Median per phase of each arm of lower_pairs.sh's output, and in how many pairs mine was lower.

    python3 benchmarks/results/lower55/summarize_lower.py pairs.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    base = [r for r in rows if r["tag"] == "base"]
    mine = [r for r in rows if r["tag"] == "mine"]
    print(f"{'phase':<16}{'base':>9}{'mine':>9}  mine lower")
    for key in base[0]:
        if key == "tag":
            continue
        b = statistics.median(r[key] for r in base)
        m = statistics.median(r.get(key, 0.0) for r in mine)
        won = sum(y.get(key, 0.0) < x[key] for x, y in zip(base, mine))
        print(f"{key:<16}{b:>9.3f}{m:>9.3f}  {won} of {min(len(base), len(mine))}")


if __name__ == "__main__":
    main()
