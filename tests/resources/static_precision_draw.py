"""Draw the precision sample of the static audit on the installed vLLM (seed committed first).

    PYTHONPATH=. python3 tests/resources/static_precision_draw.py > sample.json
    # after vllm-humming-locks-kernel joined the library (it declares 7 of the drawn pool):
    PYTHONPATH=. python3 tests/resources/static_precision_draw.py \
        --count-declared-by vllm-humming-locks-kernel
    # a draw made before the rules of round 27 (forwarded rebuilds) and 28, e.g. the twelfth
    # review's: leave out every finding a rule of a later round raised (StaticFinding.rule_round)
    PYTHONPATH=. python3 tests/resources/static_precision_draw.py \
        --seed-file tests/resources/static_precision_seed_outside10.json --leave-out-rules-after 26
    # the thirteenth review's draw (population 143), made before rules29's kept handoffs
    PYTHONPATH=. python3 tests/resources/static_precision_draw.py \
        --seed-file tests/resources/static_precision_seed_outside11.json --leave-out-rules-after 28

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def draw_pool(findings: Iterable[Any], since: Iterable[str] = (),
              rules_after: int | None = None) -> list[Any]:
    """The pool: undeclared (or declared by a spec in ``since``) error and warning findings,
    without those a rule of a round after ``rules_after`` raised (``StaticFinding.rule_round``),
    in a stable order."""
    from derivgraph.audit.static.semantics import Severity

    since = set(since)
    return sorted((f for f in findings if (not f.declared or f.spec in since)
                   and f.severity is not Severity.INFO
                   and not (rules_after is not None and f.rule_round > rules_after)),
                  key=lambda f: (f.file, f.line, f.col, f.attr, f.category))


def draw(pool: list[Any], seed: int, n: int) -> list[Any]:
    """``random.Random(seed).sample`` of ``n`` (at most the pool), by (file, line, attribute)."""
    picked = random.Random(seed).sample(pool, min(n, len(pool)))
    return sorted(picked, key=lambda f: (f.file, f.line, f.attr))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count-declared-by", nargs="*", default=[], metavar="SPEC",
                        help="specs added to the library after the draw: findings they declare "
                        "count back in the pool, so the same sample is drawn again")
    parser.add_argument("--leave-out-rules-after", type=int, default=None, metavar="ROUND",
                        help="leave out the findings a rule of a later issue-21 round raised "
                        "(StaticFinding.rule_round: 27 forwarded rebuilds, 28 reload skip set "
                        "and reset lazy tensors, 29 a rebuilt value kept by a constructor), so a "
                        "draw made before them is drawn again (the thirteenth review's: 28)")
    parser.add_argument("--leave-out-forwarded", action="store_const", const=26,
                        dest="leave_out_rules_after",
                        help="the seventh session's spelling of --leave-out-rules-after 26 "
                        "(the pool of the twelfth review's draw)")
    parser.add_argument("--seed-file", type=Path, default=HERE / "static_precision_seed.json",
                        metavar="JSON", help="seed file ({\"seed\": int, \"n\": int}) committed "
                        "before the draw; default static_precision_seed.json")
    args = parser.parse_args(argv)
    seed_file = json.loads(args.seed_file.read_text(encoding="utf-8"))
    from derivgraph.audit.static.scan import scan

    pool = draw_pool(scan(package="vllm").findings, set(args.count_declared_by),
                     args.leave_out_rules_after)
    picked = draw(pool, seed_file["seed"], seed_file["n"])
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
