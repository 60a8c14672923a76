"""Per-arm medians of the public bench's refill figures, and per-round ratios B/A.

    python3 benchmarks/results/refill43/cli_summarize.py OUT_DIR A B
"""
import json
import statistics
import sys
from pathlib import Path

out, a, b = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
KEYS = ("naive_ms", "refill_host_ms", "refill_host_cpu_ms", "refill_ms", "post_load_refill_ms",
        "post_load_refill_over_post_load")


def runs(name):
    return {int(p.stem.rsplit("_", 1)[1]): json.loads(p.read_text())
            for p in out.glob(f"{name}_*.json")}


ra, rb = runs(a), runs(b)
rounds = sorted(set(ra) & set(rb))
print(f"{len(rounds)} rounds; medians over rounds (each run: the bench's median of 21)")
print(f"{'figure':34s} {a:>9s} {b:>9s} {'ratio':>6s}  per-round {b}/{a} (min..max)")
for k in KEYS:
    xa, xb = [ra[i][k] for i in rounds], [rb[i][k] for i in rounds]
    r = [y / x for x, y in zip(xa, xb)]
    ma, mb = statistics.median(xa), statistics.median(xb)
    print(f"{k:34s} {ma:9.3f} {mb:9.3f} {mb / ma:6.2f}  {statistics.median(r):.2f} "
          f"({min(r):.2f}..{max(r):.2f})")
