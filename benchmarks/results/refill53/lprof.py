"""line_profiler of ``RefillTable.__init__`` on one stamped 100k plan (the compile's book).

    PYTHONPATH=TREE /work/venv/bin/python benchmarks/results/refill53/lprof.py
"""

import gc

from line_profiler import LineProfiler

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

seen = {}
prepare_ = Plan.prepare


def spy_prepare(self):
    seen["book"] = self.tensors.layouts
    return prepare_(self)


Plan.prepare = spy_prepare
spec = scaling_spec()
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(25000), [spec])
plan.tensors.layouts = seen["book"]
lp = LineProfiler(engine.RefillTable.__init__, engine._by_key, engine.Layouts.__init__)
for _ in range(3):
    plan._refill_table = None
    lp.runcall(plan._refill_table_now)
lp.print_stats()
