"""RowEntry made by a re-bind after the compile (Plan.bind_tensors: BoundTensors.bind, then
Holders.bind) and by BoundTensors.startup_addresses after it, at argv[1] derived tensors."""
import sys
from derivgraph.planner import compile_plan
from derivgraph.runtime import entry as E
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
plan = compile_plan(scaling_model(size // 4), [scaling_spec()])
made = [0]
orig = E.RowEntry.__init__
def init(self, *a):
    made[0] += 1
    return orig(self, *a)
E.RowEntry.__init__ = init
plan.tensors.bind(plan.model)
plan.tensors.startup_addresses()
print(f"BoundTensors.bind + startup_addresses: RowEntry made {made[0]}")
made[0] = 0
plan.bind_tensors()
print(f"Plan.bind_tensors (Holders.bind with no columns): RowEntry made {made[0]}")
