"""line_profiler of the holder bind, owner walk and refill table in one stamped 100k compile
(after a warm-up compile).

    PYTHONPATH=TREE python3 benchmarks/results/hold54/lprof.py [--size 100000]
"""

import argparse
import gc

try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import accessors, engine, holders
from derivgraph.runtime import plan as plan_mod
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
args = parser.parse_args()
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
model = scaling_model(args.size // 4)
gc.collect()
prof = LineProfiler()
for fn in (holders.Holders.bind, holders.Holders.refresh, holders.Holders.walk,
           accessors.holders_of, accessors.column_rows, accessors.HolderTable.__init__,
           accessors.HopTable.__init__, accessors.HopTable._add_run, accessors.holder_dicts,
           engine.RefillTable.__init__, engine.Layouts.__init__,
           plan_mod.Plan.prepare):
    prof.add_function(fn)
with stamping(True):
    prof.enable()
    plan = compile_plan(model, [spec])
    prof.disable()
prof.print_stats(stripzeros=True)
