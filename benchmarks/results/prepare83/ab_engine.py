"""RefillTable.__init__ (and its _by_key, Layouts.__init__) times inside warm 100k compiles
of the tree on sys.path (run once per tree, interleaved by ab_engine.sh)."""
import gc, sys, time
import derivgraph.runtime.engine as E
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
import derivgraph.runtime.accessors as A
times = {"init": [], "by_key": [], "layouts": [], "holder_dicts": [], "holders_of": [], "read_paths": []}
def wrap(owner, name, label):
    real = getattr(owner, name)
    def timed(*a, **k):
        t = time.perf_counter(); r = real(*a, **k); times[label].append(time.perf_counter() - t); return r
    for mod in [m for n, m in list(sys.modules.items()) if n.startswith("derivgraph")]:
        if getattr(mod, name, None) is real:
            setattr(mod, name, timed)
    setattr(owner, name, timed)
import derivgraph.planner, derivgraph.runtime.holders  # noqa: their imported names wrapped too
wrap(A, "holder_dicts", "holder_dicts"); wrap(A, "holders_of", "holders_of"); wrap(A, "read_paths", "read_paths")
wrap(E.RefillTable, "__init__", "init"); wrap(E, "_by_key", "by_key"); wrap(E.Layouts, "__init__", "layouts")
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
for k in times: times[k].clear()
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    model = scaling_model(25000); gc.collect(); gc.disable()
    plan = compile_plan(model, [spec]); del plan; gc.enable()
print(" ".join(f"{k} {min(v)*1e3:.1f}" for k, v in times.items() if v))  # min over compiles (per call: summed)
