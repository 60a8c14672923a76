"""Per-pair differences (rows43 - c6ddaea) over the three runs: ``pairs_b2.jsonl`` (6 pairs,
rows43 at 07bf661), ``pairs.jsonl`` (6 pairs, at 7c7a064) and ``pairs_reversed.jsonl`` (4
pairs, rows43 first in each pair and so tagged ``base``: read with its tags swapped).

    python3 pairs_all.py  (from this folder)
"""

import json
import statistics
from pathlib import Path

here = Path(__file__).parent
pairs = []
for name, reversed_tags in (("pairs_b2", False), ("pairs", False), ("pairs_reversed", True)):
    path = here / f"{name}.jsonl"
    if not path.exists():
        continue
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]
    for first, second in zip(lines[::2], lines[1::2]):
        pairs.append((second, first) if reversed_tags else (first, second))
for key in ("total_cpu", "build_graph", "  build: resolve / stamp", "  build: check_cycles",
            "  build: infer_shapes", "lower (all)", "  lower: bind_tensors"):
    diff = [mine[key] - base[key] for base, mine in pairs]
    print(f"{key.strip():22s} median diff {statistics.median(diff):+.3f} s, "  # noqa: T201
          f"rows43 faster in {sum(d < 0 for d in diff)} of {len(diff)}")
