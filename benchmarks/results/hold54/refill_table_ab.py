"""In-process A/B of building the refill table (``RefillTable.__init__``, with the compile's
layout book) and of its positions alone: the base tree's engine module (loaded by path) vs
this tree's, alternating (base first in even rounds), on one 100k stamped scaling plan.
Checks first that both tables' index, ids and storages are equal.

    PYTHONPATH=. python3 benchmarks/results/hold54/refill_table_ab.py --base /tmp/base_hold54
"""

import gc
import sys
from itertools import count
from pathlib import Path

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import engine
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

args = ab_args(__doc__, 9)
base = base_module(args.base, "derivgraph/runtime/engine.py")
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
times = alternate(args.rounds, {"table base": lambda: base.RefillTable(*targs),
                                "table mine": lambda: engine.RefillTable(*targs),
                                "positions dict": dict_positions,
                                "positions strided": strided})
report(times, "table base", "table mine")
report({k: times[k] for k in ("positions dict", "positions strided")}, "positions dict",
       "positions strided")
