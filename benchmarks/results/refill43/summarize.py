"""Medians of the per-run phase medians (or, with ``min``, of the per-run minima), per arm, and
the per-round ratios of arm B to arm A.

    python3 benchmarks/results/refill43/summarize.py OUT_DIR A B [min]
"""
import json
import statistics
import sys
from pathlib import Path

out, a, b = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
stat = "min_us" if sys.argv[4:] == ["min"] else "median_us"
PHASES = ("post_load", "refill", "restore", "sources", "owners", "read", "check", "copy",
          "rebind")


def runs(name):
    found = {}
    for p in out.glob(f"{name}_*.json"):
        found[int(p.stem.rsplit("_", 1)[1])] = json.loads(p.read_text())[stat]
    return found


ra, rb = runs(a), runs(b)
rounds = sorted(set(ra) & set(rb))
print(f"{len(rounds)} rounds; medians over rounds of each run's {stat} (us, thread CPU clock)")
print(f"{'phase':10s} {a:>10s} {b:>10s} {'ratio':>7s}  per-round ratio {b}/{a} (min..max)")
for k in PHASES + ("host",):
    def val(r, k=k):
        if k == "host":
            return sum(r[p] for p in ("restore", "sources", "owners", "read", "check", "rebind"))
        return r[k]
    xa = [val(ra[i]) for i in rounds]
    xb = [val(rb[i]) for i in rounds]
    ratios = [y / x for x, y in zip(xa, xb) if x]
    ma, mb = statistics.median(xa), statistics.median(xb)
    print(f"{k:10s} {ma:10.1f} {mb:10.1f} {mb / ma:7.2f}  {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}..{max(ratios):.2f})")
