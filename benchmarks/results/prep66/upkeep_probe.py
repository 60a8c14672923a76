"""The running source list's upkeep in DerivedGraph.add_made at 100k (what sources() no longer
sweeps): the ids of the 50k (path, tensor) pairs of the column replay, appended to the list.
usage: python benchmarks/results/prep66/upkeep_probe.py"""
import gc
import os
import statistics
import time
from operator import itemgetter

pairs = [(f"layers.{i}.{n}", object()) for i in range(25000) for n in ("scale", "weight")]
first = itemgetter(0)
times = []
gc.disable()
for _ in range(25):
    kept: list[str] = []
    start = time.perf_counter()
    kept += map(first, pairs)
    times.append(time.perf_counter() - start)
print(f"upkeep of {len(pairs)} sources: median {statistics.median(times) * 1e3:.2f} ms of 25 "
      f"(load {os.getloadavg()[0]:.2f})")
