"""Draw the precision sample of the static audit on the installed vLLM (seed committed first).

    PYTHONPATH=. python3 tests/resources/static_precision_draw.py > sample.json
    # after vllm-humming-locks-kernel joined the library (it declares 7 of the drawn pool):
    PYTHONPATH=. python3 tests/resources/static_precision_draw.py \
        --count-declared-by vllm-humming-locks-kernel

The seed and the sample size are read from static_precision_seed.json (or --seed-file, e.g.
static_precision_seed_outside.json for the outside review), committed before any judging. The
pool is every undeclared error and warning finding of
``derivgraph audit static --package vllm`` with the built-in spec library, sorted by (file,
line, column, attribute, category); ``random.Random(seed).sample`` picks ``n``. Each
picked row carries the finding's reader and weight evidence; the judged copy (with a verdict and
the quoted reader line per site) is static_precision_vllm_0.33.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count-declared-by", nargs="*", default=[], metavar="SPEC",
                        help="specs added to the library after the draw: findings they declare "
                        "count back in the pool, so the same sample is drawn again")
    parser.add_argument("--seed-file", type=Path, default=HERE / "static_precision_seed.json",
                        metavar="JSON", help="seed file ({\"seed\": int, \"n\": int}) committed "
                        "before the draw; default static_precision_seed.json")
    args = parser.parse_args(argv)
    since = set(args.count_declared_by)
    seed_file = json.loads(args.seed_file.read_text(encoding="utf-8"))
    from derivgraph.audit.static.scan import scan
    from derivgraph.audit.static.semantics import Severity

    report = scan(package="vllm")
    pool = sorted((f for f in report.findings if (not f.declared or f.spec in since)
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
