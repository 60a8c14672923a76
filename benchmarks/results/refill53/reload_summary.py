"""Per path: base and this tree's medians over the reload_pairs files, and how often this tree
was faster in a pair. A file named *swapped* was run with the trees' arguments swapped (its
"base" line is this tree). The null file (base against base) is summarized the same way.

    /work/venv/bin/python reload_summary.py reload_pairs.txt reload_pairs_b.txt reload_pairs_swapped.txt
"""

import statistics
import sys

pairs = []
for path in sys.argv[1:]:
    rows = [line.split(" ", 1) for line in open(path) if line.strip()]
    swapped = "swapped" in path
    for (wa, a), (wb, b) in zip(rows[::2], rows[1::2]):
        va = dict(kv.rsplit("=", 1) for kv in a.split(" ") if "=" in kv)
        vb = dict(kv.rsplit("=", 1) for kv in b.replace("moved+rebind (one rebuilt)", "moved+rebind").split(" ") if "=" in kv)
        va = dict(kv.rsplit("=", 1) for kv in a.replace("moved+rebind (one rebuilt)", "moved+rebind").split(" ") if "=" in kv)
        base, this = (vb, va) if swapped else (va, vb)
        pairs.append((base, this))
for key in pairs[0][0]:
    b = [float(p[0][key]) for p in pairs]
    t = [float(p[1][key]) for p in pairs]
    faster = sum(x < y for x, y in zip(t, b))
    print(f"{key:18s} base {statistics.median(b):.5f}  this {statistics.median(t):.5f}  "
          f"this faster {faster}/{len(b)}")
