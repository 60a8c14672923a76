"""Per part, base and mine medians over the pairs and in how many pairs mine is lower.

    python3 benchmarks/results/prepare62/parts_summary.py OUT.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1])]
    pairs: dict[int, dict[str, dict[str, float]]] = {}
    trees = []
    for row in rows:
        if row["tree"] not in trees:
            trees.append(row["tree"])
        pairs.setdefault(row["pair"], {})[row["tree"]] = row["parts"]
    base, mine = trees
    labels = list(rows[0]["parts"])
    print(f"{'part':40s} {'base':>8s} {'mine':>8s}  lower in")
    for label in labels:
        b = [p[base].get(label, 0.0) for p in pairs.values() if base in p and mine in p]
        m = [p[mine].get(label, 0.0) for p in pairs.values() if base in p and mine in p]
        wins = sum(y < x for x, y in zip(b, m))
        print(f"{label:40s} {statistics.median(b):8.4f} {statistics.median(m):8.4f}  "
              f"{wins} of {len(b)}")


if __name__ == "__main__":
    main()
