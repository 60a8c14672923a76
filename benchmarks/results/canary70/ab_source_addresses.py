"""In-process A/B of the noted source addresses (canary70 part 2) on the 100k scaling compile.

Arm ``base``: ``ColumnLayouts.note_read_addresses`` a no-op (the layer proof reads every source
row's ``untyped_storage().data_ptr()``, as main does); arm ``mine``: this tree. Pairs
interleaved, the order alternating; per compile: wall and thread CPU time of ``compile_plan``,
and the thread CPU time spent in ``note_read_addresses`` plus ``column_addresses`` (the pieces
changed: the note, and the layer proof's and the storage fence's address reads).
Every compile's generated pass source is compared between the arms.
usage: PYTHONPATH=. python3 benchmarks/results/canary70/ab_source_addresses.py PAIRS [SIZE] [OUT]
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import lower_layers, schedule_layers
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
OUT = sys.argv[3] if len(sys.argv) > 3 else None

real_note = ColumnLayouts.note_read_addresses
spent = [0.0]


def _timed(fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[0] += time.thread_time() - start
    return wrapper


real_note = _timed(real_note)
lower_layers.column_addresses = _timed(lower_layers.column_addresses)
schedule_layers.column_addresses = lower_layers.column_addresses


def compile_once(arm: str) -> tuple[float, float, float, str]:
    ColumnLayouts.note_read_addresses = real_note if arm == "mine" else (  # type: ignore
        lambda self, tensors, ptrs: None)
    model = scaling_model(SIZE // 4)
    gc.collect()
    spent[0] = 0.0
    wall, cpu = time.perf_counter(), time.thread_time()
    plan = planner.compile_plan(model, [scaling_spec()])
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    return wall * 1e3, cpu * 1e3, spent[0] * 1e3, plan.source()


compile_once("mine")  # warm-up
compile_once("base")
rows: dict[str, list[tuple[float, float, float]]] = {"base": [], "mine": []}
same = True
for i in range(PAIRS):
    order = ("base", "mine") if i % 2 == 0 else ("mine", "base")
    sources = {}
    for arm in order:
        wall, cpu, part, source = compile_once(arm)
        rows[arm].append((wall, cpu, part))
        sources[arm] = source
    same = same and sources["base"] == sources["mine"]


def med(arm: str, k: int) -> float:
    return statistics.median(r[k] for r in rows[arm])


result: dict[str, Any] = {"pairs": PAIRS, "size": SIZE, "same_source": same,
                          "load": os.getloadavg()}
for k, name in enumerate(("wall_ms", "cpu_ms", "pieces_cpu_ms")):
    diffs = [m[k] - b[k] for b, m in zip(rows["base"], rows["mine"])]
    result[name] = {"base": med("base", k), "mine": med("mine", k),
                    "paired_median": statistics.median(diffs),
                    "mine_lower": f"{sum(d < 0 for d in diffs)} of {PAIRS}"}
result["rows"] = rows
print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
if OUT:
    with open(OUT, "w") as f:
        json.dump(result, f, indent=1)
