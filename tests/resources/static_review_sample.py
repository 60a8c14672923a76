"""Pick the random sample of static-audit findings on the installed vLLM for the hand review.

    PYTHONPATH=. python3 tests/resources/static_review_sample.py --seed 3011 -n 40 > sample.json

Samples, with a fixed seed, from the undeclared error and warning findings (what a user acts
on), sorted by (file, line, column, attribute, category) first so the draw is reproducible.
The reviewed copy, with a judgement and a reason per site, is static_review_vllm_0.33.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3011)
    parser.add_argument("-n", type=int, default=40)
    args = parser.parse_args(argv)
    from derivgraph.audit.static.scan import scan
    from derivgraph.audit.static.semantics import Severity

    report = scan(package="vllm")
    pool = sorted((f for f in report.findings if not f.declared
                   and f.severity is not Severity.INFO),
                  key=lambda f: (f.file, f.line, f.col, f.attr, f.category))
    picked = sorted(random.Random(args.seed).sample(pool, args.n),
                    key=lambda f: (f.file, f.line, f.attr))
    out = {
        "seed": args.seed, "population": len(pool), "vllm": "0.33.0",
        "sample": [{"file": f.file, "line": f.line, "attr": f.attr, "owner": f.owner,
                    "category": f.category, "severity": f.severity.value, "reason": f.reason,
                    "judgement": "", "why": ""} for f in picked],
    }
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
