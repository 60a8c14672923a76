"""Draw the precision sample of the static audit on the installed vLLM (seed committed first).

    PYTHONPATH=. python3 tests/resources/static_precision_draw.py > sample.json

The seed and the sample size are read from static_precision_seed.json, committed before any
judging. The pool is every undeclared error and warning finding of
``derivgraph audit static --package vllm`` with the built-in spec library, sorted by
(file, line, column, attribute, category); ``random.Random(seed).sample`` picks ``n``. Each
picked row carries the finding's reader and weight evidence; the judged copy (with a verdict and
the quoted reader line per site) is static_precision_vllm_0.33.json.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    seed_file = json.loads((HERE / "static_precision_seed.json").read_text(encoding="utf-8"))
    from derivgraph.audit.static.scan import scan
    from derivgraph.audit.static.semantics import Severity

    report = scan(package="vllm")
    pool = sorted((f for f in report.findings if not f.declared
                   and f.severity is not Severity.INFO),
                  key=lambda f: (f.file, f.line, f.col, f.attr, f.category))
    picked = random.Random(seed_file["seed"]).sample(pool, min(seed_file["n"], len(pool)))
    picked.sort(key=lambda f: (f.file, f.line, f.attr))
    rows = []
    for f in picked:
        row = {k: v for k, v in f.as_json().items()
               if k in ("file", "line", "attr", "owner", "category", "severity", "store",
                        "reason", "reader", "derives_from", "evidence")}
        rows.append({**row, "judgement": "", "why": ""})
    out = {"seed": seed_file["seed"], "population": len(pool), "vllm": "0.33.0", "sample": rows}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
