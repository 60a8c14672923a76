"""In-process A/B of ``_lower``'s constant entries at 100k (supporting evidence): on one stamped
compile's own plan, the base tree's per-entry sweep (``planner.py`` at ce091834, the
comprehension over ``plan.entries.items()``) and ``planner._constant_entries`` (the closed
tables' rows per template column) run alternately, order reversed every other round, process
time; the answers are asserted equal (the same list, the same order) first.

    PYTHONPATH=. python3 benchmarks/results/consts65/constants_ab.py --rounds 21
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import alternate, report  # noqa: E402

from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import _constant_entries, compile_plan  # noqa: E402
from derivgraph.spec.kinds import HELD_KINDS  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    deps = plan.graph.source_deps()

    def base() -> list[str]:
        return [n for n, e in plan.entries.items()  # deps first: most have some
                if not deps[n] and e.node.kind in HELD_KINDS
                and e.node.input is not None]

    def mine() -> list[Any]:
        return _constant_entries(plan, deps)

    assert base() == mine() == plan.constant_entries
    print(f"{len(plan.entries)} entries, {len(plan.constant_entries)} constant")
    gc.disable()
    report(alternate(args.rounds, {"base": base, "mine": mine}))


if __name__ == "__main__":
    main()
