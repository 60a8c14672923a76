"""Medians and per-pair 'mine faster' counts over reload_pairs files (base line, then mine).

    python benchmarks/results/hold52/reload_summary.py FILE [FILE ...]
"""

import re
import statistics
import sys

pairs: dict[str, list[tuple[float, float]]] = {}
for path in sys.argv[1:]:
    lines = [line.split(" ", 1) for line in open(path) if line.startswith(("base", "mine"))]
    for (tb, b), (tm, m) in zip(lines[::2], lines[1::2]):
        assert tb == "base" and tm == "mine"
        vb = dict(re.findall(r"(\S.*?)=([\d.]+)", b))
        vm = dict(re.findall(r"(\S.*?)=([\d.]+)", m))
        for key in vb:
            pairs.setdefault(key.strip(), []).append((float(vb[key]), float(vm[key])))
for key, ps in pairs.items():
    base, mine = statistics.median(b for b, _ in ps), statistics.median(m for _, m in ps)
    faster = sum(m < b for b, m in ps)
    print(f"{key:28s} base {base:.5f}  mine {mine:.5f}  mine faster {faster}/{len(ps)}")
