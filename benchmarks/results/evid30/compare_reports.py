"""Compares two ``derivgraph audit static --package vllm --format json --show-info`` reports:
sites, severities and declared must be identical; prints every finding whose reader changed."""

import json
import sys

old, new = (json.load(open(p)) for p in sys.argv[1:3])
site = [(f["file"], f["line"], f["col"], f["attr"]) for f in old]
print("findings", len(old), len(new))
print("sites identical:", site == [(f["file"], f["line"], f["col"], f["attr"]) for f in new])
print("severities identical:", [f["severity"] for f in old] == [f["severity"] for f in new])
print("declared identical:", [f["declared"] for f in old] == [f["declared"] for f in new])
for a, b in zip(old, new):
    moved = sorted(k for k in a if a[k] != b.get(k))
    if moved:
        print(f"{a['file']}:{a['line']} {a['attr']} changed {moved}")
        for k in moved:
            print(f"  old {k}: {a[k]}\n  new {k}: {b[k]}")
