"""RowEntry objects made by one warm compile (and by a run, refill, run after it) at
argv[1] derived tensors, counted by a class counter on RowEntry.__init__ (its callers)."""
import collections, sys, traceback
from derivgraph.planner import compile_plan
from derivgraph.runtime import entry as E
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
calls = collections.Counter()
orig = E.RowEntry.__init__
def init(self, *a):
    st = traceback.extract_stack(limit=5)[:-1]
    calls[" <- ".join(f"{f.name}" for f in reversed(st[-3:]))] += 1
    return orig(self, *a)
E.RowEntry.__init__ = init
model = scaling_model(size // 4)
plan = compile_plan(model, [spec])
print(f"compile: RowEntry made {sum(calls.values())}; by_id {type(plan.entries.by_id).__name__}")
for k, v in calls.most_common(5): print(f"  {v} {k}")
calls.clear()
plan.run(); plan.refill(); plan.run()
print(f"run, refill, run: RowEntry made {sum(calls.values())}")
