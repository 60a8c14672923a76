"""In-process A/B of back46's changes on one stamped 100k scaling plan: each piece of the base
tree (loaded from ``--base``, the base archive) vs the same piece of this tree, alternating
``--rounds`` times on the same inputs (answers checked equal first); process seconds, medians.
Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/back46/micro.py --base /tmp/base_back46 --rounds 11
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--base", default="/tmp/base_back46")
parser.add_argument("--only", default="")
args = parser.parse_args()


def base_module(rel: str, name: str):
    spec = importlib.util.spec_from_file_location(name, f"{args.base}/{rel}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


base_transaction = base_module("derivgraph/compiler/transaction.py", "base_transaction")
base_engine = base_module("derivgraph/runtime/engine.py", "base_engine")
base_columns = base_module("derivgraph/adoption_columns.py", "base_adoption_columns")
from derivgraph import adoption, adoption_columns  # noqa: E402
from derivgraph.compiler import transaction as my_transaction  # noqa: E402
from derivgraph.runtime import engine  # noqa: E402

captured = {}
_allocated_rows = adoption.allocated_rows


def keep_rows(*a, **k):
    captured["rows"] = a
    return _allocated_rows(*a, **k)


adoption.allocated_rows = keep_rows

books = []


class Kept(planner.ColumnLayouts):  # the compile's book, kept for the harness
    __slots__ = ()

    def __init__(self):
        super().__init__()
        books.append(self)


planner.ColumnLayouts = Kept
spec = scaling_spec()
gc.disable()
model = scaling_model(args.size // 4)
with stamping(True):
    plan = planner.compile_plan(model, [spec])
print(f"plan: {len(plan.entries)} entries", flush=True)

owner_paths = {e.node.owner_path for e in plan.entries.values()}
warm = PathReader(model)
warm.owners(sorted(owner_paths))  # as adoption's reader: every owner walked once


def transaction_facts(t):
    return [(id(live), sorted(saved)) for live, saved in t._dicts], len(t._values)


rows_args = captured["rows"]
alias_args = (*rows_args[:3], adoption.AliasOf)


def column_facts(out):
    return [(k, e.node.id, e.slot, e.adopted, id(e.storage), id(x)) for k, (e, x) in out.items()]


refill_args = (plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
               set(plan._opaque()), books[-1])


def refill_facts(t):
    return (t.ids, t.index, t.dtypes, [tuple(x) for x in t.shapes], t.nbytes, t.spans,
            [(a, b) for a, b, _ in t.flat], t.whole, t.complete, t.is_constant, t.engine,
            t.rest_spans, t._numels, t._layouts._guard is not None, list(map(id, t.storages)))


guard_table = engine.RefillTable(*refill_args)
guard_args = (guard_table.dtypes, guard_table.shapes, guard_table._numels)


def guard_of(module):
    def run():
        layouts = module.Layouts(*guard_args)
        layouts.guard(guard_table.storages)
        return layouts
    return run


def guard_facts(layouts):  # the guard passes the storages and refuses a changed shape
    wrong = list(guard_table.storages)
    wrong[-1] = wrong[-1].reshape(-1)[:1].clone()
    return (layouts._guard is not None, layouts._guard.check(*guard_table.storages),
            layouts._guard.check(*wrong))


cases = {
    "Layouts.guard": (guard_of(base_engine), guard_of(engine), guard_facts),
    "RefillTable": (lambda: base_engine.RefillTable(*refill_args),
                    lambda: engine.RefillTable(*refill_args), refill_facts),
    "allocated+alias rows": (
        lambda: (base_columns.allocated_rows(*rows_args), base_columns.alias_rows(*alias_args)),
        lambda: (adoption_columns.allocated_rows(*rows_args),
                 adoption_columns.alias_rows(*alias_args)),
        lambda pair: [column_facts(o) for o in pair]),
    "transaction": (lambda: base_transaction.ModelTransaction(model, owner_paths, []),
                    lambda: my_transaction.ModelTransaction(model, owner_paths, [], warm),
                    transaction_facts),
}
for name, (run_base, run_mine, facts) in cases.items():
    if args.only and name not in args.only.split(","):
        continue
    assert facts(run_base()) == facts(run_mine()), name
    times = {"base": [], "mine": []}
    for _ in range(args.rounds):
        for tag, f in (("base", run_base), ("mine", run_mine)):
            start = time.process_time()
            f()
            times[tag].append(time.process_time() - start)
    b, m = statistics.median(times["base"]), statistics.median(times["mine"])
    wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
    print(f"{name:24s} base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  "
          f"mine faster {wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
          f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
