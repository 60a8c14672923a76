"""Medians per tree and "mine lower in N of M" per phase, from ``phase_pairs.py`` output.

    python3 benchmarks/results/lower60/summarize_phases.py FILE.jsonl MINE_TREE
"""

from __future__ import annotations

import json
import statistics
import sys


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    mine_tree = sys.argv[2].rstrip("/")
    mine = [r for r in rows if r["tree"] == mine_tree]
    base = [r for r in rows if r["tree"] != mine_tree]
    keys = [k for k in rows[0] if k != "tree"]
    print(f"{'phase':34} {'base':>7} {'mine':>7}  mine lower")  # noqa: T201
    for k in keys:
        b, m = [r.get(k, 0.0) for r in base], [r.get(k, 0.0) for r in mine]
        wins = sum(y < x for x, y in zip(b, m))
        print(f"{k:34} {statistics.median(b):7.3f} {statistics.median(m):7.3f}  "  # noqa: T201
              f"{wins} of {min(len(b), len(m))}")


if __name__ == "__main__":
    main()
