"""Medians per arm and "mine lower in N of M" from parts_pairs.sh's output.

    python3 benchmarks/results/startup64/parts_summary.py benchmarks/results/startup64/parts_pairs_1.txt
"""

from __future__ import annotations

import re
import statistics
import sys


def main() -> None:
    text = open(sys.argv[1]).read()
    blocks = re.split(r"== pair (\d+) (base|mine)\n", text)[1:]
    data: dict[str, dict[str, list[float]]] = {}
    for i in range(0, len(blocks), 3):
        arm, body = blocks[i + 1], blocks[i + 2]
        for line in body.strip().splitlines():
            fields = line.split()
            data.setdefault(fields[0], {}).setdefault(arm, []).append(float(fields[1]))
    for name, arms in data.items():
        base, mine = arms.get("base", []), arms.get("mine", [])
        wins = sum(m < b for b, m in zip(base, mine))
        print(f"{name:26s} base {statistics.median(base):.4f} mine {statistics.median(mine):.4f}"
              f"  lower in {wins} of {min(len(base), len(mine))}  base {base} mine {mine}")


if __name__ == "__main__":
    main()
