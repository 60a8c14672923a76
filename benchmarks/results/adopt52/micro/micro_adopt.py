"""In-process: time adoption.adopt_or_allocate on one prepared stamped plan (the compile's own
call captured; a reader already holding every owner each time), repeated."""
import gc, statistics, sys, time
import derivgraph.planner as planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
n = int(sys.argv[1]); reps = int(sys.argv[2]); stamped = len(sys.argv) < 4 or sys.argv[3] != "plain"
seen = {}
orig = planner.adopt_or_allocate
def grab(plan, values, owners=None, proven=None):
    out = orig(plan, values, owners, proven)
    seen["args"] = (plan, values, owners)
    return out
planner.adopt_or_allocate = grab
model = scaling_model(n // 4)
with stamping(stamped):
    planner._prepare(model, [scaling_spec()], False, True)
plan, values, owners = seen["args"]
gc.disable()
ts = []
for _ in range(reps):
    reader = PathReader(model)
    reader._owners = dict(owners._owners)
    proven = []
    t0 = time.process_time(); orig(plan, values, reader, proven); ts.append(time.process_time() - t0)
    gc.collect()
print(f"adopt median {statistics.median(ts):.4f} min {min(ts):.4f}")
