import gc, sys
from derivgraph import column_layout as cl
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1])
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
names = {}
for n, t in list(model.named_parameters()) + list(model.named_buffers()):
    names[id(t)] = n
l0 = model.layers[0] if hasattr(model, "layers") else None
print(type(model), [n for n, _ in list(model.named_children())[:3]])
orec = cl.ColumnLayouts._record
def rec(self, t):
    r = orec(self, t)
    if r is None:
        print("not held:", names.get(id(t)), type(t).__name__, tuple(t.shape), "base", t._base is not None, [ (k, type(v).__name__) for k, v in vars(model.layers[0]).items() if v is t] if l0 is not None else "")
    return r
cl.ColumnLayouts._record = rec
gc.collect(); gc.disable()
compile_plan(model, [spec])
