"""Per-pair differences (readers41 - 072b696) over the three 4-pair runs, the reversed one
(``pairs_100k_c_reversed.jsonl``: readers41 ran first in each pair, tagged ``base``) read with
its tags swapped.

    python3 pairs_all.py  (from this folder)
"""

import json
import statistics
from pathlib import Path

here = Path(__file__).parent
pairs = []
for name, reversed_tags in (("a", False), ("b", False), ("c_reversed", True)):
    lines = [json.loads(x) for x in (here / f"pairs_100k_{name}.jsonl").read_text().splitlines()]
    for first, second in zip(lines[::2], lines[1::2]):
        pairs.append((second, first) if reversed_tags else (first, second))
for key in ("total_cpu", "build_graph", "evaluate", "  lower: bind_tensors", "lower (all)"):
    diff = [mine[key] - base[key] for base, mine in pairs]
    print(f"{key.strip():22s} median diff {statistics.median(diff):+.3f} s, "  # noqa: T201
          f"readers41 faster in {sum(d < 0 for d in diff)} of {len(diff)}")
