import gc, sys, time, traceback
from derivgraph import column_layout as cl
import derivgraph; print(derivgraph.__file__)
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1])
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
orig = cl.ColumnLayouts._fresh_words
def fw(self):
    before = self._words[1]
    t = time.perf_counter(); r = orig(self); dt = time.perf_counter() - t
    st = traceback.extract_stack()[-6:-1]
    print(f"fresh_words {dt*1e3:.2f} ms log {before}->{len(self._log)} words {len(r)}", " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(st)))
    return r
cl.ColumnLayouts._fresh_words = fw
model = scaling_model(size // 4)
gc.collect(); gc.disable()
compile_plan(model, [spec])
