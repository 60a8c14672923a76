"""Side-by-side min / median of the --pieces runs of two trees (us per reload).

    python3 benchmarks/results/reload54/pieces_table.py base.json mine.json [...pairs]
"""
import json
import sys

files = sys.argv[1:]
data = [json.load(open(f)) for f in files]
names = list(data[0]["pieces_us"])
print("piece".ljust(48) + "".join(f.split("/")[-1].removesuffix(".json").rjust(22) for f in files))
for n in names:
    cells = []
    for d in data:
        p = d["pieces_us"].get(n)
        cells.append(f"{p['min']:.1f} / {p['median']:.1f}" if p else "-")
    print(n.ljust(48) + "".join(c.rjust(22) for c in cells))
print("paired delta us (median)".ljust(48)
      + "".join(f"{d['paired']['delta_us_median']:.1f}".rjust(22) for d in data))
print("paired ratio (median)".ljust(48)
      + "".join(f"{d['paired']['ratio_median']:.4f}".rjust(22) for d in data))
