"""Print where two dumps of dump_readers.py / dump_owners.py differ (old first, then new)."""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
sections = a if all(isinstance(v, dict) for v in a.values()) and "owners" in a else {"owners": a}
if sections is not a:
    b = {"owners": b}
for name in sections:
    x, y = a[name] if sections is a else sections[name], b[name]
    diff = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
    print(f"{name}: {len(x)} vs {len(y)} entries, {len(diff)} differ")
    for k in diff:
        print(f"  {k}\n    old: {json.dumps(x.get(k))[:400]}\n    new: {json.dumps(y.get(k))[:400]}")
