"""Not taken (a global side effect): the plan's young objects promoted to the oldest generation by
``gc.freeze(); gc.unfreeze()`` right after the compile; the first young collection then walks
none of them (they are walked at the next full collection instead, with every other old object)."""
import gc
import sys
import time

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

promote = sys.argv[1:] == ["promote"]
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
model = scaling_model(25000)
gc.collect()
gc.disable()
plan = compile_plan(model, [spec])
p = time.process_time()
if promote:
    gc.freeze()
    gc.unfreeze()
p = time.process_time() - p
g = time.process_time()
gc.collect(0)
g = time.process_time() - g
f = time.process_time()
gc.collect()
f = time.process_time() - f
print(f"{'promote' if promote else 'plain':8s} promote {p * 1e3:.2f} ms, "
      f"first gc(0) {g * 1e3:.1f} ms, "
      f"then full gc {f * 1e3:.1f} ms")
