import gc, sys, time, traceback
from derivgraph import column_layout as cl
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1])
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
orig = cl.ColumnLayouts.common
def common(self, tensors):
    col = self._columns.get(id(tensors[0])) if tensors else None
    kind = "none" if col is None else ("same" if col[0] is tensors else f"sweep{len(tensors)} {type(tensors).__name__}/{type(col[0]).__name__}")
    t = time.perf_counter(); r = orig(self, tensors); dt = time.perf_counter() - t
    st = traceback.extract_stack()[-4:-1]
    print(f"common {dt*1e3:.2f} ms {kind} ->{r is not None}", " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(st)))
    return r
cl.ColumnLayouts.common = common
o2 = cl._run_in
def run_in(items, column, start=None):
    t = time.perf_counter(); r = o2(items, column, start); dt = time.perf_counter() - t
    st = traceback.extract_stack()[-4:-1]
    print(f"_run_in {dt*1e3:.2f} ms n={len(column)} same={items is column}", " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(st)))
    return r
cl._run_in = run_in
model = scaling_model(size // 4)
gc.collect(); gc.disable()
compile_plan(model, [spec])
