"""Exactness of this tree's ``RefillTable`` against the base tree's (engine module loaded by
path), built from the same 100k stamped plan's holder table, with and without the compile's
layout book, and on a shuffled / partial target list: every attribute a refill reads equal
(tensors by identity).

    PYTHONPATH=. python3 benchmarks/results/cols48/refill_equal.py --base /tmp/base_cols48
"""

import argparse
import importlib.util
import random
import sys

import torch

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
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
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
table = plan.holders.table
targets = plan._refill_targets()
rng = random.Random(0)
shuffled = targets[:]
rng.shuffle(shuffled)
cases = {"targets": targets, "shuffled": shuffled, "partial": shuffled[: len(targets) // 3],
         "empty": [], "one": targets[:1], "with a non-holder": targets[:5] + ["nope"]}
ATTRS = ("ids", "index", "shapes", "dtypes", "nbytes", "is_constant", "engine", "complete",
         "spans", "whole", "rest_spans", "_total", "_constants", "_numels")
bad = 0
for name, tg in cases.items():
    for book in (seen["book"], None):
        a = base.RefillTable(table, tg, set(plan.constant_entries), set(plan._opaque()), book)
        b = engine.RefillTable(table, tg, set(plan.constant_entries), set(plan._opaque()), book)
        diffs = [k for k in ATTRS if getattr(a, k) != getattr(b, k)]
        if len(a.storages) != len(b.storages) or not all(map(lambda x, y: x is y, a.storages,
                                                               b.storages)):
            diffs.append("storages")
        if [(s, e) for s, e, _ in a.flat] != [(s, e) for s, e, _ in b.flat]:
            diffs.append("flat")
        la, lb = a._layouts, b._layouts
        if (la.dtypes, la.shapes, la._sizes) != (lb.dtypes, lb.shapes, lb._sizes) \
                or (la._nd is None) != (lb._nd is None) \
                or (la._nd is not None and la._nd[1] != lb._nd[1]):
            diffs.append("_layouts")
        probe = [torch.empty_like(t) if isinstance(t, torch.Tensor) else t
                 for t in table.storages]
        ta, tb = a.take(probe), b.take(probe)
        if (ta is None) != (tb is None) or (ta is not None and (
                ta.mask != tb.mask or ta.nbytes != tb.nbytes or ta.spans != tb.spans
                or not all(map(lambda x, y: x is y, ta.theirs, tb.theirs)))):
            diffs.append("take")
        bad += bool(diffs)
        print(f"{name:18s} book={book is not None!s:5s} n={len(tg):6d} "
              f"{'EQUAL' if not diffs else 'DIFF ' + ','.join(diffs)}", flush=True)
print("ALL EQUAL" if not bad else f"{bad} DIFFERENT")
