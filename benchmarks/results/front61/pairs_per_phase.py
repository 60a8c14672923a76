"""Per pair (base, mine) and how many pairs mine was lower, for named phases of a pairs.jsonl
(``compile36/pairs.sh``: base then mine, alternating).

    python3 benchmarks/results/front61/pairs_per_phase.py PAIRS.jsonl [PHASE ...]
"""

from __future__ import annotations

import json
import sys

PHASES = ["bind: match_specs", "bind: check_bindings", "bind", "build_graph", "total_cpu"]
#: "bind": match_specs + check_bindings


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1])]
    base = [r for r in rows if r["tag"] == "base"]
    mine = [r for r in rows if r["tag"] == "mine"]
    for phase in sys.argv[2:] or PHASES:
        names = ["bind: match_specs", "bind: check_bindings"] if phase == "bind" else [phase]
        pairs = [(round(sum(b[n] for n in names), 4), round(sum(m[n] for n in names), 4))
                 for b, m in zip(base, mine, strict=True)]
        lower = sum(m < b for b, m in pairs)
        print(f"{phase:22s} mine lower in {lower} of {len(pairs)}: {pairs}")

if __name__ == "__main__":
    main()
