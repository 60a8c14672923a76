"""Field-by-field diff of two `derivgraph audit static --format json --show-info` reports."""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = ("file", "line", "attr", "category", "severity", "declared")
print(f"{len(a)} findings vs {len(b)}; sites, categories, severities, declared identical:",
      [tuple(f[k] for k in key) for f in a] == [tuple(f[k] for k in key) for f in b])
changed = 0
for x, y in zip(a, b):
    for k in x:
        if x[k] != y.get(k):
            changed += k == "reader"
            print(f"{x['file']}:{x['line']} {x['attr']} {k}\n  old: {x[k]}\n  new: {y.get(k)}")
print(f"readers changed: {changed}")
