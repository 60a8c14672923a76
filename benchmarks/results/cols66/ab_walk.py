"""In-process A/B: the bind's module walk, torch's ``list(model.named_modules())`` (A) vs
``bind.named_modules`` (B), on the 100k scaling model (25k layers); interleaved."""
import statistics
import sys
import time

import gc
from derivgraph.compiler.bind import named_modules
from derivgraph.tools.bench_scaling import scaling_model

gc.disable()  # as compile_plan runs (its objects are freed by refcount)

model = scaling_model(25000)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 21
a_t, b_t = [], []
for _ in range(reps):
    t = time.perf_counter()
    a = list(model.named_modules())
    a_t.append(time.perf_counter() - t)
    t = time.perf_counter()
    b = named_modules(model)
    b_t.append(time.perf_counter() - t)
    assert a == b
wins = sum(y < x for x, y in zip(a_t, b_t))
print(f"modules {len(a)}: A torch median {statistics.median(a_t)*1e3:.2f} ms, "
      f"B named_modules median {statistics.median(b_t)*1e3:.2f} ms, B faster in {wins} of {reps}")
