"""The cost of :meth:`Plan.hold_rows` at 100k, by piece, on a plan compiled with it off:
the order list, the holder table's compare, the columns' checks (``_releasable``) and the
whole call (which also frees the rows' entries). Two rounds.
usage: PYTHONPATH=. python3 benchmarks/results/rowentry79/hold_rows_pieces.py
"""

from __future__ import annotations

import gc
import time

from derivgraph.planner import compile_plan
from derivgraph.runtime.entry import _releasable
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

HOLD = Plan.hold_rows


def main() -> None:
    Plan.hold_rows = lambda self: False  # type: ignore[method-assign]
    for _ in range(2):
        plan = compile_plan(scaling_model(25000), [scaling_spec()])
        gc.collect()
        gc.disable()
        by_id, table = plan.entries.by_id, plan.holders.table
        t0 = time.perf_counter()
        list(by_id)
        t1 = time.perf_counter()
        same = table.entries == list(by_id.values())
        t2 = time.perf_counter()
        ok = [_releasable(c) for _, c in plan.entries.rows]
        t3 = time.perf_counter()
        del by_id
        t4 = time.perf_counter()
        held = HOLD(plan)
        t5 = time.perf_counter()
        print(f"list(by_id) {1e3 * (t1 - t0):.1f} ms, holder compare {1e3 * (t2 - t1):.1f}, "
              f"releasable {1e3 * (t3 - t2):.1f}, whole hold_rows (frees the entries) "
              f"{1e3 * (t5 - t4):.1f}", held, same, ok)
        gc.enable()
        del plan


if __name__ == "__main__":
    main()
