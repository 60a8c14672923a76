"""In-process A/B (interleaved): the 25k rows' devices of one declaration, per row
(``device_of`` mapped, the base) against ``devices_of`` (the column sweep).
usage: PYTHONPATH=. python3 benchmarks/results/build69/micro_devices.py [PAIRS]"""
import os
import statistics
import sys
import time
from itertools import repeat

from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.resolve import device_of, devices_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 31
spec = scaling_spec()
bounds = match_specs(scaling_model(25000), [spec])
decl = spec.derived[0]
assert devices_of(bounds, decl, {}) == list(map(device_of, bounds, repeat(decl), repeat({})))
a, b = [], []
for _ in range(pairs):
    plain: dict = {}
    t = time.perf_counter()
    list(map(device_of, bounds, repeat(decl), repeat(plain)))
    a.append(time.perf_counter() - t)
    plain = {}
    t = time.perf_counter()
    devices_of(bounds, decl, plain)
    b.append(time.perf_counter() - t)
print(f"rows {len(bounds)}  per row (base) median {statistics.median(a) * 1e3:.2f} ms  "
      f"devices_of median {statistics.median(b) * 1e3:.2f} ms  "
      f"{sum(y < x for x, y in zip(a, b))} of {pairs}  load {os.getloadavg()[0]:.2f}")
