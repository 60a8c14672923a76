"""How much of the hand-written spec library `derivgraph trace` reproduces from post-load code.

For every case in tests/fixtures/trace_cases.py (the reference modules, the synthetic vLLM
layers, and every real vLLM 0.33.0 MoE / drafter / Kimi-K3 MLA / MLAAttention configuration
that tests/vllm/specs/test_specs_*.py build on CPU): trace the post-load step, prove the draft
(A->B->A, 0 moved, bit-exact vs cold start), then compare it with the hand-written specs per module
class: same declared paths (owner + name), same kinds, same values at A, B and A again.

    PYTHONPATH=$PWD python3 benchmarks/trace_reproduction.py [--json OUT]

A class is *reproduced* when nothing hand-written is missing and kinds and values agree
(extra traced declarations, which passed the oracle, are allowed and counted); *identical*
when there are no extras either.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fixtures.trace_cases import all_cases, cpu_patches  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the per-class results here")
    parser.add_argument("--only", nargs="*", help="case name substrings")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # compile_plan warns per spec that matches no module
    rows = []
    start = time.perf_counter()
    with cpu_patches():
        for case in all_cases():
            if args.only and not any(s in case.name for s in args.only):
                continue
            outcome = case.trace()
            unexpressed = [f"{u.path}: {u.reason}" for u in outcome.draft.unexpressed]
            if not outcome.proof.ok:
                rows.append({"case": case.name, "class": "<draft>", "reproduced": False,
                             "identical": False, "detail": outcome.proof.summary(),
                             "unexpressed": unexpressed})
                print(f"{case.name:<48} draft not proven: {outcome.proof.summary()[:120]}")
                continue
            for cmp in case.compare(outcome.specs):
                reproduced = not (cmp.error or cmp.missing or cmp.kind_mismatch
                                  or cmp.value_mismatch)
                rows.append({"case": case.name, "class": cmp.module_class,
                             "reproduced": reproduced, "identical": cmp.equivalent,
                             "hand": len(cmp.hand), "traced": len(cmp.traced),
                             "hand_specs": cmp.hand_specs,
                             "unreproduced_specs": cmp.unreproduced_specs,
                             "detail": cmp.describe(), "unexpressed": unexpressed})
                mark = "identical" if cmp.equivalent else ("superset" if reproduced else "NO")
                print(f"{case.name:<48} {cmp.module_class:<26} {mark:<9} "
                      f"hand {len(cmp.hand):>3} traced {len(cmp.traced):>3}"
                      + ("" if cmp.equivalent else f"  {cmp.describe()[:160]}"))
    n = len(rows)
    reproduced = sum(r["reproduced"] for r in rows)
    identical = sum(r["identical"] for r in rows)
    seconds = time.perf_counter() - start
    print(f"\nreproduced {reproduced}/{n} = {100 * reproduced / n:.0f}% of (case, module class) "
          f"pairs ({identical}/{n} = {100 * identical / n:.0f}% identical, no extras); "
          f"{seconds:.0f} s")
    # a hand-written spec is reproduced when every declaration it makes, in every case, is
    seen = {s for r in rows for s in r.get("hand_specs", ())}
    missed = {s for r in rows for s in r.get("unreproduced_specs", ())}
    specs = {"reproduced": sorted(seen - missed), "not_reproduced": sorted(missed)}
    print(f"hand-written specs exercised: {len(seen)}; reproduced by the trace: "
          f"{len(specs['reproduced'])}; not: {', '.join(specs['not_reproduced']) or '-'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"reproduced": reproduced, "identical": identical,
                                               "total": n, "seconds": round(seconds),
                                               "specs": specs, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
