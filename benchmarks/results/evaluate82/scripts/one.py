import gc, sys, time, json
from derivgraph import column_layout as cl
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
words = [0.0, 0]
orig = cl.ColumnLayouts._fresh_words
def fw(self):
    t = time.perf_counter(); r = orig(self); words[0] += time.perf_counter() - t; words[1] += 1; return r
model = scaling_model(size // 4)
gc.collect(); gc.disable()
t = time.process_time(); plan = compile_plan(model, [spec]); total = time.process_time() - t
t = time.perf_counter(); gc.collect(0); g0 = time.perf_counter() - t
# the words' cost on this compile's objects: a second compile with the counter
del plan; gc.enable(); gc.collect()
cl.ColumnLayouts._fresh_words = fw
model = scaling_model(size // 4); gc.collect(); gc.disable()
compile_plan(model, [spec])
print(json.dumps({"compile_cpu": total, "gc0": g0, "words_s": words[0], "words_calls": words[1]}))
