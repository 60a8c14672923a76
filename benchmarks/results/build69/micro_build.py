"""In-process A/B (interleaved) of ``build_graph`` on the 100k scaling model: the run's
devices by ``device_of`` per row (the base, patched in) against ``devices_of`` (this branch).
usage: PYTHONPATH=. python3 benchmarks/results/build69/micro_build.py [PAIRS]"""
import gc
import os
import statistics
import sys
import time
from itertools import repeat

import derivgraph.compiler.build as build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.resolve import device_of, devices_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
spec = scaling_spec()


def per_row(bounds, decl, plain):  # the base's line: one device_of call per row
    return list(map(device_of, bounds, repeat(decl), repeat(plain)))


def one(devices) -> float:
    gc.collect()  # the previous arm's graph gone before this one is timed
    model = scaling_model(25000)
    bound = match_specs(model, [spec])
    build.devices_of = devices
    gc.disable()  # as compile_plan runs
    try:
        t = time.perf_counter()
        build.build_graph(model, bound)
        return time.perf_counter() - t
    finally:
        gc.enable()
        build.devices_of = devices_of


one(devices_of)  # warm-up
a, b = [], []
for i in range(pairs):  # each arm first in every other pair
    if i % 2:
        b.append(one(devices_of))
        a.append(one(per_row))
    else:
        a.append(one(per_row))
        b.append(one(devices_of))
print(f"build_graph 100k  per-row devices (base) median {statistics.median(a) * 1e3:.1f} ms  "
      f"devices_of median {statistics.median(b) * 1e3:.1f} ms  "
      f"{sum(y < x for x, y in zip(a, b))} of {pairs}  load {os.getloadavg()[0]:.2f}")
