import gc, sys, time
from derivgraph.planner import compile_plan
from derivgraph.runtime import storage
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spent = []
real = storage.BoundTensors._forget if hasattr(storage, "BoundTensors") else None
cls = next(c for c in vars(storage).values() if isinstance(c, type) and "_forget" in vars(c))
real = cls._forget
def timed(self):
    t = time.perf_counter(); real(self); spent.append(time.perf_counter() - t)
cls._forget = timed
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
for r in range(3):
    model = scaling_model(25000)
    gc.collect(); gc.disable(); spent.clear()
    t = time.perf_counter(); plan = compile_plan(model, [spec]); t = time.perf_counter() - t
    print(sys.argv[1], f"compile {t:.3f} s, _forget calls {len(spent)}, total {sum(spent)*1e3:.2f} ms, max {max(spent)*1e3:.2f} ms")
    del plan, model; gc.enable()
