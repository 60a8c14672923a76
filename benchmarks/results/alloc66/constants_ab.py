"""In-process A/B of ``planner._constant_entries`` with and without the compile's order.

One stamped 100k compile; then, alternating (the order reversed every other round), the
rule (``order=None``: the entries filtered by a set of the constants) and the positions
(``(ids, at)``, as ``_compile`` hands them: the entries' ids and the generic ones'
positions); answers asserted equal; process time, medians and N of M.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/alloc66/constants_ab.py [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--size", type=int, default=100000)
    args = parser.parse_args()
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    deps = plan.graph.source_deps()
    ids = list(plan.entries)
    where = dict(zip(ids, range(len(ids))))
    order = (ids, [where[n] for n in plan.entries.generic])
    arms = {"rule": None, "positions": order}
    want = planner._constant_entries(plan, deps)
    assert planner._at_positions(order, plan.entries, *_parts(plan, deps)) == want
    times: dict[str, list[float]] = {a: [] for a in arms}
    gc.disable()
    for r in range(args.rounds):
        for arm in (("rule", "positions") if r % 2 == 0 else ("positions", "rule")):
            start = time.process_time()
            got = planner._constant_entries(plan, deps, arms[arm])
            times[arm].append(time.process_time() - start)
            assert got == want
            del got
    gc.enable()
    a, b = times["rule"], times["positions"]
    print(f"size {args.size}, {args.rounds} rounds, {len(want)} constants, "
          f"load {os.getloadavg()}")
    print(f"_constant_entries rule {statistics.median(a):.4f}  positions "
          f"{statistics.median(b):.4f}  positions lower {sum(y < x for x, y in zip(a, b))} "
          f"of {len(a)}")


def _parts(plan, deps):  # type: ignore[no-untyped-def]
    generic = planner._constants_of(plan.entries.generic.items(), deps)
    free = [c for c in plan.entries.columns if not deps[c.template]]
    return generic, [planner._constants_of(zip(c.ids, c.entries), deps, True) for c in free]


if __name__ == "__main__":
    main()
