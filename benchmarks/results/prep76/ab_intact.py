"""In-process A/B: ``AtAddresses``' first ``intact()`` over the 100k plan's holder storages and
sources, the words' compare first (new) against the exact compare first (old: ``_NUMEL`` None),
interleaved rounds.

    PYTHONPATH=TREE python3 ab_intact.py [ROUNDS]
"""

import gc
import statistics
import sys
import time

from derivgraph import addresses as A
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec = scaling_spec()
plan = compile_plan(scaling_model(25000), [spec])
table = plan.holders.table
src = plan.holders._source_checks[2]
sets = [("holders", table.storages, table.ptrs), ("sources", src.tensors, src.ptrs)]
numel = A._NUMEL
res: dict[tuple[str, str], list[float]] = {
    (n, m): [] for n, *_ in sets for m in ("old", "new")}
gc.disable()
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
    for mode in (("old", "new") if r % 2 else ("new", "old")):
        A._NUMEL = numel if mode == "new" else None
        for name, ts, ptrs in sets:
            at = A.AtAddresses(ts, ptrs)
            t0 = time.perf_counter()
            ok = at.intact()
            dt = time.perf_counter() - t0
            assert ok and at.words is not None and at.words.kept()
            res[name, mode].append(dt)
A._NUMEL = numel
for (name, mode), v in res.items():
    print(f"{name:8s} {mode}: median {statistics.median(v) * 1e3:6.2f} ms  "
          f"min {min(v) * 1e3:6.2f}  (n={len(v)})")
print("sizes", len(table.storages), len(src.tensors))
