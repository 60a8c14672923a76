"""Compare a fresh draw with the committed thirteenth-review draw: population, seed, the sample's
sites in order, and which of the drawn findings' fields changed (reader, evidence...).
Usage: python3 draw_compare.py COMMITTED_DRAW.json FRESH_DRAW.json
"""
import json
import sys


def key(x):
    return (x["file"], x["line"], x["attr"], x["category"])


a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(f"population {a['population']} -> {b['population']}; seed equal: {a['seed'] == b['seed']}; "
      f"same sites in the same order: {[key(x) for x in a['sample']] == [key(x) for x in b['sample']]}"
      f" ({len(a['sample'])} -> {len(b['sample'])})")
for i, (x, y) in enumerate(zip(a["sample"], b["sample"]), 1):
    changed = [f for f in x if x[f] != y.get(f)]
    if changed:
        print(f"item {i} {key(x)[0]}:{key(x)[1]} {key(x)[2]} changed={changed}\n"
              f"   OLD reader {x.get('reader')}\n   NEW reader {y.get('reader')}")
