"""In-process: time planner._mismatches on a compiled stamped plan (the compile's own call
captured), repeated."""
import gc, statistics, sys, time
import derivgraph.planner as planner
from derivgraph.column_layout import ColumnLayouts
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
n = int(sys.argv[1]); reps = int(sys.argv[2])
seen = {}
orig = planner._mismatches
def grab(plan, values):
    seen["args"] = (plan, values, plan.tensors.layouts)
    return orig(plan, values)
planner._mismatches = grab
plan = planner.compile_plan(scaling_model(n // 4), [scaling_spec()])
plan, values, book = seen["args"]
plan.tensors.layouts = book
gc.disable()
ts = []
for _ in range(reps):
    t0 = time.process_time(); bad = orig(plan, values); ts.append(time.process_time() - t0)
assert bad == []
print(f"mismatches median {statistics.median(ts):.4f} min {min(ts):.4f}")
