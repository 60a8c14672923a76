"""Wall time inside named functions (module:qualname) over one warm compile at argv[1], gc off; argv[2] rounds."""
import collections
import gc
import importlib
import sys
import time

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size, rounds = int(sys.argv[1]), int(sys.argv[2])
tot = collections.defaultdict(list)
def patch(spec):
    mod, _, qual = spec.partition(":")
    owner = importlib.import_module(mod)
    parts = qual.split(".")
    for p in parts[:-1]:
        owner = getattr(owner, p)
    f = getattr(owner, parts[-1])
    acc = [0.0, 0]
    def w(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            acc[0] += time.perf_counter() - t; acc[1] += 1
    setattr(owner, parts[-1], w)
    return acc
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
accs = {s: patch(s) for s in sys.argv[3:]}
for r in range(rounds):
    model = scaling_model(size // 4)
    gc.collect(); gc.disable()
    for a in accs.values(): a[:] = [0.0, 0]
    t = time.perf_counter(); plan = compile_plan(model, [spec]); tot["compile"].append(time.perf_counter() - t)
    for s, a in accs.items(): tot[s].append(a[0]); tot[s + " calls"] = a[1]
    gc.enable(); del plan, model
for s, v in tot.items():
    print(f"{s:70s} {v if isinstance(v, int) else 'min %.2f med %.2f ms' % (min(v)*1e3, sorted(v)[len(v)//2]*1e3)}")
