"""Per-pair deltas (scan43 - base) of a pairs file: python3 pair_deltas.py FILE KEY [KEY...]
(KEY: a key=value field of the lines, e.g. user+sys, wall, total)."""
import re
import statistics
import sys

rows: dict[int, dict[str, dict[str, float]]] = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    tree, rest = line.split(" ", 1)
    fields = dict(re.findall(r"(\S+?)=(\S+)", rest))
    rows.setdefault(int(fields["pair"]), {})[tree] = {k: float(v) for k, v in fields.items()
                                                      if re.fullmatch(r"[\d.]+", v)}
for key in sys.argv[2:]:
    base = [r["base"][key] for r in rows.values() if "base" in r and "scan43" in r]
    mine = [r["scan43"][key] for r in rows.values() if "base" in r and "scan43" in r]
    deltas = [m - b for b, m in zip(base, mine)]
    ratios = [m / b for b, m in zip(base, mine)]
    print(f"{key}: base {', '.join(f'{v:.2f}' for v in base)} (median {statistics.median(base):.2f})"
          f" | scan43 {', '.join(f'{v:.2f}' for v in mine)} (median {statistics.median(mine):.2f})"
          f" | deltas {', '.join(f'{d:+.2f}' for d in deltas)} (median {statistics.median(deltas):+.2f})"
          f" | ratio median {statistics.median(ratios):.3f}")
