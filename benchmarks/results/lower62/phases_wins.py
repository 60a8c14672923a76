"""Per-pair (base, mine) values and how many pairs mine is lower in, for each phase of
alternating ``lower_phases.py`` runs (a ``== TREE i LOAD`` line before each run's output; the
base tree's runs first in each pair).

    python3 benchmarks/results/lower62/phases_wins.py benchmarks/results/lower62/phases_ab.txt
"""

from __future__ import annotations

import statistics
import sys


def main() -> None:
    runs: list[dict[str, float]] = []
    for line in open(sys.argv[1]):
        if line.startswith("=="):
            runs.append({})
        elif line.strip() and runs:
            label, _, value = line.rstrip().rpartition(" ")
            runs[-1][label.strip()] = float(value)
    base, mine = runs[0::2], runs[1::2]
    for phase in base[0]:
        pairs = [(b[phase], m[phase]) for b, m in zip(base, mine) if phase in m]
        wins = sum(m < b for b, m in pairs)
        print(f"{phase:22} {statistics.median(b for b, _ in pairs):7.4f} -> "  # noqa: T201
              f"{statistics.median(m for _, m in pairs):7.4f}  {wins} of {len(pairs)}")


if __name__ == "__main__":
    main()
