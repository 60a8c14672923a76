"""In-process interleaved A/B (this tree): A = as is; B = base's kept state emulated: the
compile's address memo kept alive past the compile (what base's `LayerSteps.values` did) and
the book's noted addresses copied into it (base's `list(noted)`). Per round one warm 100k
compile, then the young container items and the first gc.collect(0). Usage: memo_ab.py ROUNDS"""
import gc, json, statistics, sys, time
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler import lower, lower_layers
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
MODE = {"b": False}
ALIVE = []
real_pl, real_addr = lower_layers.provable_layers, ColumnLayouts.addresses
def pl(ctx, kept=None):
    out = real_pl(ctx, kept)
    if MODE["b"]:
        ALIVE.append(lower_layers._memo(ctx))
    return out
def addresses(self, tensors):
    got = real_addr(self, tensors)
    return list(got) if MODE["b"] and got is not None else got
lower.provable_layers = pl
ColumnLayouts.addresses = addresses
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
out = {"A": [], "B": []}
for r in range(int(sys.argv[1])):
    for tag in ("A", "B") if r % 2 == 0 else ("B", "A"):
        MODE["b"] = tag == "B"
        model = scaling_model(25000)
        gc.collect(); gc.disable()
        plan = compile_plan(model, [spec])
        objs = gc.get_objects(0)
        items = sum(len(o) for o in objs if type(o) in (list, tuple, dict)); del objs
        t = time.perf_counter(); gc.collect(0); t = time.perf_counter() - t
        row = {"tag": tag, "items": items, "gc0_ms": round(t * 1e3, 2)}
        print(json.dumps(row), flush=True); out[tag].append(row)
        del plan, model; ALIVE.clear(); gc.enable(); gc.collect()
for tag, rows in out.items():
    print(tag, "median gc0_ms", statistics.median(r["gc0_ms"] for r in rows),
          "min", min(r["gc0_ms"] for r in rows), "items", rows[0]["items"])
