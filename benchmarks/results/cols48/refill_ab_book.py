"""entries45's ``refill_ab.py`` with the tables built as the compile builds them (with its
layout book, captured at ``Plan.prepare``): in-process A/B of ``RefillTable.take``, base engine
module (loaded by path) vs this tree's, alternating, on one 100k scaling plan (stamped): a take
of fresh tensors for every target (the guard's fast path) and a take whose guard is dropped
each time (the sweeps, then the guard built again). The order within a round alternates (base
first in even rounds, this tree first in odd ones).

    PYTHONPATH=. python3 benchmarks/results/cols48/refill_ab_book.py --base /tmp/base_cols48
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

import torch

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
parser.add_argument("--reps", type=int, default=20)
args = parser.parse_args()
found = importlib.util.spec_from_file_location("base_engine",
                                               f"{args.base}/derivgraph/runtime/engine.py")
base = sys.modules[found.name] = importlib.util.module_from_spec(found)
found.loader.exec_module(base)

seen = {}
prepare = Plan.prepare


def spy(self):
    seen["book"] = self.tensors.layouts
    return prepare(self)


Plan.prepare = spy
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
targs = (plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
         set(plan._opaque()), seen["book"])
tables = {"base": base.RefillTable(*targs), "mine": engine.RefillTable(*targs)}
current = [torch.empty_like(t) if isinstance(t, torch.Tensor) else t
           for t in plan.holders.table.storages]


def fast(table):
    def run():
        for _ in range(args.reps):
            assert table.take(current) is not None
    return run


def rebuilt(table):
    def run():
        for _ in range(args.reps // 4):
            table._layouts._guard, table._layouts._guards = None, 0
            assert table.take(current) is not None
    return run


for name, make in (("take (guard fast path) x reps", fast),
                   ("take (guard rebuilt) x reps/4", rebuilt)):
    times = {"base": [], "mine": []}
    for r in range(args.rounds):
        for tag in (("base", "mine") if r % 2 == 0 else ("mine", "base")):  # order alternates
            fn = make(tables[tag])
            start = time.process_time()
            fn()
            times[tag].append(time.process_time() - start)
    b, m = statistics.median(times["base"]), statistics.median(times["mine"])
    wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
    print(f"{name:32s} base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  mine faster "
          f"{wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
          f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
