"""Per-piece medians of prepare's cut pieces at 100k in one tree (run base and this tree in
turn, fresh processes): strided_positions over the refill targets, watch._by_runs over the
holder table's dicts, a RefillTable built again from the compile's arguments (book included),
and take_startup_words into a fresh startup check.

usage: PYTHONPATH=TREE python3 benchmarks/results/prep72/micro.py TAG [REPEAT]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.runtime import engine, watch
from derivgraph.runtime.accessors import NO_DICT
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

tag = sys.argv[1]
repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 9
args: dict = {}
real = engine.RefillTable.__init__


def keep(self, table, targets, constants, engine_set, layouts=None):
    args.update(table=table, targets=targets, constants=constants, engine=engine_set,
                layouts=layouts)
    real(self, table, targets, constants, engine_set, layouts)


engine.RefillTable.__init__ = keep
plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
engine.RefillTable.__init__ = real
table = args["table"]


def timed(fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 2)


def words() -> None:
    plan.tensors._startup = None
    plan.tensors.take_startup_words(table.addresses(), table.entries)


out = {"tag": tag,
       "strided_positions_ms": timed(lambda: engine.strided_positions(table.id_list,
                                                                      args["targets"])),
       "by_runs_holders_ms": timed(lambda: watch._by_runs(table.dicts, NO_DICT)),
       "refill_table_ms": timed(lambda: engine.RefillTable(
           table, args["targets"], args["constants"], args["engine"], args["layouts"])),
       "startup_words_ms": timed(words)}
print(json.dumps(out))  # noqa: T201 - a benchmark script reports on stdout
