"""In-process timing of the holder / refill / source-check pieces on one stamped 100k plan
(compiled once; each piece re-run on that plan, medians of ``--reps`` process-time runs).

    PYTHONPATH=TREE python3 benchmarks/results/cols48/micro.py [--size 100000] [--reps 5]
"""

import argparse
import gc
import statistics
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=5)
args = parser.parse_args()
seen = {}
bind = Holders.bind


def spy(self, sources, columns=()):
    seen["columns"] = columns = list(columns)
    return bind(self, sources, columns)


Holders.bind = spy
prepare_ = Plan.prepare


def spy_prepare(self):
    seen["book"] = self.tensors.layouts
    return prepare_(self)


Plan.prepare = spy_prepare
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [spec])
h = plan.holders
plan.tensors.layouts = seen["book"]  # the compile's layout book, as prepare sees it
sources, held = plan.tensors.sources, seen["columns"]


def refill_table():
    plan._refill_table = None
    plan._refill_table_now()


def sources_fresh():
    h._source_checks = h._source_watch = None
    assert h.sources_intact()


def prepare():
    plan._refill_table = None
    h._source_checks = h._source_watch = None
    h.table.watch = None
    plan.prepare()


pieces = {
    "holders.bind": lambda: bind(h, sources, held),
    "  walk": lambda: h.walk(),
    "  refresh": lambda: h.refresh(held),
    "RefillTable": refill_table,
    "sources_intact (fresh)": sources_fresh,
    "prepare (all)": prepare,
}
out = {k: [] for k in pieces}
for _ in range(args.reps):
    for name, fn in pieces.items():
        start = time.process_time()
        fn()
        out[name].append(time.process_time() - start)
# leave the plan as bound for the checks below
bind(h, sources, held)
prepare()
for name, xs in out.items():
    print(f"{name:24s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
rep = plan.refill()
print("refill steps", rep.steps, "moved", plan.moved())
