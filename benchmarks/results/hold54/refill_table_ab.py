"""In-process A/B of building the refill table (``RefillTable.__init__``, with the compile's
layout book) and of its positions alone: the base tree's engine module (loaded by path) vs
this tree's, alternating (base first in even rounds), on one 100k stamped scaling plan.
Checks first that both tables' index, ids and storages are equal.

    PYTHONPATH=. python3 benchmarks/results/hold54/refill_table_ab.py --base /tmp/base_hold54
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from itertools import count

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import engine
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=9)
args = parser.parse_args()
found = importlib.util.spec_from_file_location("base_engine",
                                               f"{args.base}/derivgraph/runtime/engine.py")
base = sys.modules[found.name] = importlib.util.module_from_spec(found)
found.loader.exec_module(base)

gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
table = plan.holders.table
targs = (table, plan._refill_targets(), set(plan.constant_entries), set(plan._opaque()),
         plan.tensors.layouts)
a, b = base.RefillTable(*targs), engine.RefillTable(*targs)
assert a.index == b.index and a.ids == b.ids and all(map(lambda x, y: x is y, a.storages,
                                                         b.storages))
print("equal index, ids, storages:", True, len(b.index), "targets")


def dict_positions() -> list:
    position = dict(zip(table.id_list, count()))
    return list(map(position.get, targs[1]))


def strided() -> list:
    return engine.strided_positions(table.id_list, targs[1])


assert strided() == dict_positions()
times: dict[str, list[float]] = {k: [] for k in ("table base", "table mine", "positions dict",
                                                 "positions strided")}
for r in range(args.rounds):
    order = [("base", base), ("mine", engine)]
    if r % 2:
        order.reverse()
    for name, mod in order:
        s = time.process_time()
        mod.RefillTable(*targs)
        times[f"table {name}"].append(time.process_time() - s)
    for name, fn in (("positions dict", dict_positions), ("positions strided", strided)):
        s = time.process_time()
        fn()
        times[name].append(time.process_time() - s)
for k, xs in times.items():
    print(f"{k:18s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
wins = sum(m < b for b, m in zip(times["table base"], times["table mine"]))
print(f"table: mine faster in {wins} of {args.rounds} rounds")
