"""In-process A/B of the two startup records at 100k (interleaved rounds, collector off while
timing): the old per-row records (a dict of (id, address) tuples; an (UntypedStorage, layout)
tuple per column row) against the column records (SourcePtrs; one StartupColumn per column),
each made from one compiled plan's real objects, then one young collection of what was kept."""
import gc
import statistics
import sys
import time
from collections import deque
from itertools import repeat

from derivgraph.planner import compile_plan
from derivgraph.runtime.entry import StartupColumn
from derivgraph.runtime.source_ptrs import SourcePtrs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
plan = compile_plan(scaling_model(size // 4), [scaling_spec()])
record = plan.source_ptrs
paths, ptrs = list(record.paths), list(record.ptrs)
tensors = [plan.tensors.sources.get(p) for p in paths]
assert None not in tensors
cols = [c for c in plan.entries.columns if type(c.entries[0].startup_data) is StartupColumn]
held = [(c.entries, c.entries[0].startup_data.storages, c.entries[0].startup_data.layout,
         c.ids) for c in cols]


def old():
    kept = [dict(zip(paths, zip(map(id, tensors), ptrs)))]
    for entries, storages, layout, _ids in held:
        deque(map(setattr, entries, repeat("startup_data"), zip(storages, repeat(layout))), 0)
    return kept


def new():
    kept = [SourcePtrs.record(paths, tensors, ptrs, 0)]
    for entries, storages, layout, ids in held:
        rec = StartupColumn(storages, layout, ids)
        deque(map(setattr, entries, repeat("startup_data"), repeat(rec)), 0)
    return kept


times = {"old": [], "new": [], "old_gc": [], "new_gc": []}
for i in range(rounds):
    for name, fn in (("old", old), ("new", new)) if i % 2 == 0 else (("new", new), ("old", old)):
        gc.collect()
        gc.disable()
        t = time.perf_counter()
        kept = fn()
        t1 = time.perf_counter()
        gc.collect(0)
        t2 = time.perf_counter()
        gc.enable()
        times[name].append(t1 - t)
        times[name + "_gc"].append(t2 - t1)
        del kept
for k, v in times.items():
    print(f"{k:7s} median {statistics.median(v) * 1e3:7.2f} ms  min {min(v) * 1e3:7.2f} ms")
print("sources", len(paths), "column rows", sum(len(h[0]) for h in held))
