"""Where the first gc.collect(0) after one warm compile (argv[1], default 100000) spends: the
young objects by type, and the time of one tp_traverse of each (``gc.get_referents``, one
C-level sweep per type, cold: the first sweep, as the collector's), with the number of
referents visited; then gc(0) itself."""
import collections, gc, sys, time
import torch
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
t = time.perf_counter(); plan = compile_plan(model, [spec]); t = time.perf_counter() - t
objs = gc.get_objects(0)
by = collections.defaultdict(list)
for o in objs:
    by[type(o).__qualname__].append(o)
del objs
print(f"compile {t:.3f} s")
for name, os_ in sorted(by.items(), key=lambda kv: -len(kv[1]))[:8]:
    t = time.perf_counter(); refs = gc.get_referents(*os_); t = time.perf_counter() - t
    t2 = time.perf_counter(); gc.get_referents(*os_); t2 = time.perf_counter() - t2
    print(f"{len(os_):8d} {name:20s} referents {len(refs):8d}  traverse cold {t*1e3:6.1f} ms, warm {t2*1e3:6.1f} ms")
    del refs
by.clear()
t = time.perf_counter(); gc.collect(0); print(f"gc(0) {(time.perf_counter()-t)*1e3:.1f} ms")
