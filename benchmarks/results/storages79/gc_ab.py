"""One warm 100k compile, then its first young collection timed (process time) and the young
count; argv[1]: a tag. Run in the base tree and in the inexact no-storages tree
(``inexact_no_storages.diff``), interleaved."""
import gc
import sys
import time

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
model = scaling_model(25000)
gc.collect()
gc.disable()
t = time.process_time()
plan = compile_plan(model, [spec])
t = time.process_time() - t
n = gc.get_count()[0]
g = time.process_time()
gc.collect(0)
g = time.process_time() - g
print(f"{sys.argv[1]} compile_cpu {t:.3f} young_count {n} gc0_cpu {g:.4f}", flush=True)
