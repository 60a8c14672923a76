"""Per-phase deltas (mine - base) of the plain column of bench_compile_phases.py outputs
phases_{base,mine}_{1..4}.txt (pairs 1-2 ran base first, 3-4 mine first): median delta and
pairs where this tree was faster.

    python3 benchmarks/results/hold47/plain_deltas.py benchmarks/results/hold47
"""
import statistics
import sys

d = sys.argv[1]


def read(path):
    out = {}
    for line in open(path):
        parts = line.rstrip("\n").rsplit(None, 2)
        if len(parts) == 3:
            try:
                out[parts[0].strip()] = (float(parts[1]), float(parts[2]))
            except ValueError:
                pass
    return out


pairs = [(read(f"{d}/phases_base_{i}.txt"), read(f"{d}/phases_mine_{i}.txt")) for i in range(1, 5)]
for col, label in ((1, "plain"), (0, "stamped")):
    print(f"== {label}")
    for key in pairs[0][0]:
        deltas = [m[key][col] - b[key][col] for b, m in pairs]
        print(f"{key:34s} base {statistics.median([b[key][col] for b, _ in pairs]):7.3f}  "
              f"median delta {statistics.median(deltas):+.3f}  faster "
              f"{sum(x < 0 for x in deltas)}/4  {[round(x, 3) for x in deltas]}")
