"""In-process A/B: a stamped run's derived-node devices, per row (device_of, A) vs by
column (devices_of, B), on the 100k scaling model's 25k bound layers; interleaved."""
import statistics
import sys
import time
from itertools import repeat

import gc
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.resolve import device_of, devices_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

gc.disable()  # as compile_plan runs (its objects are freed by refcount)

spec = scaling_spec()
model = scaling_model(25000)
bounds = [b for b in match_specs(model, [spec]) if b.module_path]
decl = spec.derived[0]
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 21
a_t, b_t = [], []
for _ in range(reps):
    t = time.perf_counter()
    a = list(map(device_of, bounds, repeat(decl), repeat({})))
    a_t.append(time.perf_counter() - t)
    t = time.perf_counter()
    b = devices_of(bounds, decl, {})
    b_t.append(time.perf_counter() - t)
    assert a == b
wins = sum(y < x for x, y in zip(a_t, b_t))
print(f"rows {len(bounds)}: A device_of median {statistics.median(a_t)*1e3:.2f} ms, "
      f"B devices_of median {statistics.median(b_t)*1e3:.2f} ms, B faster in {wins} of {reps}")
