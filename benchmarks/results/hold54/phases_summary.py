"""Per phase: each tree's median over phases_alternating.txt (bench_compile_phases.py output,
stamped and plain columns, base first in each pair) and how often this tree was faster.

    cd benchmarks/results/hold54 && python3 phases_summary.py phases_alternating.txt
"""

import statistics
import sys

runs: list[tuple[str, dict[str, tuple[float, float]]]] = []
for line in open(sys.argv[1]):
    if line.startswith("=="):
        runs.append(("base" if "base" in line else "mine", {}))
        continue
    parts = line.rstrip().rsplit(None, 2)
    if runs and len(parts) == 3:
        try:
            runs[-1][1][parts[0].strip()] = (float(parts[1]), float(parts[2]))
        except ValueError:
            pass
base = [r for t, r in runs if t == "base"]
mine = [r for t, r in runs if t == "mine"]
print(f"{'phase':34} {'stamped base':>12} {'mine':>7} {'faster':>7}   {'plain base':>10} "
      f"{'mine':>7} {'faster':>7}")
for key in base[0]:
    cols = []
    for c in (0, 1):
        b = [r[key][c] for r in base]
        m = [r[key][c] for r in mine]
        n = sum(y < x for x, y in zip(b, m))
        cols.append(f"{statistics.median(b):12.3f} {statistics.median(m):7.3f} {n:3d}/{len(b)}")
    print(f"{key:34} {cols[0]}   {cols[1]}")
