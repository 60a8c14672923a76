"""Which callers reach the per-row sweeps, with which sequences (type, length, very list or not), in one warm 100k compile."""
import collections
import gc
import sys
import time
import traceback

from derivgraph import column_layout as cl
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
log = []
seen_ids = {}
hold = []
def wrap(owner, name):
    f = getattr(owner, name)
    def w(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); dt = time.perf_counter() - t
        sk = traceback.extract_stack(limit=4)
        st = sk[-2]; up = sk[-3]
        args = [x for x in a if isinstance(x, (list, tuple))]
        desc = ",".join(f"{type(x).__name__}[{len(x)}]" for x in args[:2])
        extra = ""
        if name == "common" and len(a) > 1 and a[1]:
            col = a[0]._columns.get(id(a[1][0]))
            extra = "very" if col is not None and col[0] is a[1] else ("col" if col else "nocol")
        if name == "_noted" and len(a) > 1 and a[1]:
            n = a[0]._addresses.get(id(a[1][0]))
            extra = "very" if n is not None and n[0] is a[1] else ("col" if n else "nocol")
        seen_ids.setdefault(id(args[0]) if args else 0, len(seen_ids)); hold.append(args)
        log.append((name, f"{st.filename.split('derivgraph/')[-1]}:{st.lineno}<{up.filename.split('derivgraph/')[-1]}:{up.lineno}", desc + f" L{seen_ids.get(id(args[0]) if args else 0)}", extra, dt))
        return r
    setattr(owner, name, w)
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
for n in sys.argv[2:]:
    owner, _, attr = n.rpartition(".")
    wrap(eval(owner) if owner else cl, attr)
gc.collect(); gc.disable()
plan = compile_plan(model, [spec])
agg = collections.defaultdict(lambda: [0, 0.0])
for name, where, desc, extra, dt in log:
    a = agg[(name, where, desc, extra)]; a[0] += 1; a[1] += dt
for k, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{t*1e3:7.2f} ms {n:3d}x  {k[0]:10s} {k[1]:40s} {k[2]:30s} {k[3]}")
