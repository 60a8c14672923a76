"""Medians and per-pair differences of build_ab.sh's JSON lines."""

import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
base = [r["build_graph_cpu"] for r in rows if r["tag"] == "base"]
mine = [r["build_graph_cpu"] for r in rows if r["tag"] == "mine"]
diff = [m - b for b, m in zip(base, mine)]
print(f"pairs {len(diff)}: base median {statistics.median(base):.3f}, mine median "  # noqa: T201
      f"{statistics.median(mine):.3f}, per-pair median {statistics.median(diff):+.3f}, "
      f"mine faster in {sum(d < 0 for d in diff)} of {len(diff)}")
print("pairs (base, mine):", list(zip(base, mine)))  # noqa: T201
