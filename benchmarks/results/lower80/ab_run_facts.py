import gc, sys, time, statistics
import derivgraph.compiler.codegen as C
import derivgraph.planner as P
from derivgraph.runtime import plan as RP
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec = scaling_spec()
new_rf = C._run_facts
def old_rf(em, got, values, n):
    book, dtype = C.book_of(em.ctx), got.dtype
    a, b = values[:n], values[n:]
    a_shape = C._proved(C._column_facts(a, book), dtype)
    b_shape = C._proved(C._column_facts(b, book), dtype) if b else a_shape
    shape = C._proved(got, dtype)
    return C._RunFacts(dtype, shape, a_shape, b_shape,
                     None if shape is None else C._noted(book, got.values),
                     C._noted(book, got.values, storages=True))
times = {"old": [], "new": []}
cur = [None]
orig_install = RP.Plan.install
def inst(self, *a, **k):
    t = time.perf_counter(); r = orig_install(self, *a, **k); times[cur[0]].append(time.perf_counter() - t); return r
RP.Plan.install = inst
whole = {"old": [], "new": []}
cur[0] = "old"; compile_plan(scaling_model(25000), [spec]); times["old"].clear()
for r in range(int(sys.argv[1])):
    for arm in (("old", "new") if r % 2 == 0 else ("new", "old")):
        C._run_facts = old_rf if arm == "old" else new_rf
        cur[0] = arm
        model = scaling_model(25000)
        gc.collect(); gc.disable()
        t = time.perf_counter(); compile_plan(model, [spec]); whole[arm].append(time.perf_counter() - t)
        gc.enable()
        del model
for arm in ("old", "new"):
    print(arm, "install median %.1f ms min %.1f" % (1e3*statistics.median(times[arm]), 1e3*min(times[arm])),
          "compile median %.3f min %.3f" % (statistics.median(whole[arm]), min(whole[arm])))
