import gc, sys, time, importlib.util, statistics
from derivgraph import column_layout as cl
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec_ = importlib.util.spec_from_file_location("base_cl", "/tmp/base82/derivgraph/column_layout.py")
base = importlib.util.module_from_spec(spec_); sys.modules["base_cl"] = base; spec_.loader.exec_module(base)
size = int(sys.argv[1])
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
oof = cl.ColumnLayouts.of
grab = []
def of(self, tensors):
    grab.append((self, list(tensors))); return oof(self, tensors)
cl.ColumnLayouts.of = of
model = scaling_model(size // 4)
gc.collect(); gc.disable()
plan = compile_plan(model, [spec])
cl.ColumnLayouts.of = oof
for book, tensors in grab:
    book._all = None
    a = base.ColumnLayouts.of(book, tensors); b = cl.ColumnLayouts.of(book, tensors)
    assert len(a) == len(b) and all(x is y for x, y in zip(a, b)), "differ"
print("of calls", len(grab), [len(t) for _, t in grab], "identical answers")
book, tensors = max(grab, key=lambda g: len(g[1]))
# words
def words_old(b):
    from array import array
    return [array("Q", map(id, t)).tobytes() for t, l, f in b._log if f]
def words_new(b):
    import numpy
    return [numpy.fromiter(map(id, t), numpy.uint64, len(t)).tobytes() for t, l, f in b._log if f]
assert words_old(book) == words_new(book)
res = {"of_old": [], "of_new": [], "words_old": [], "words_new": []}
for r in range(15):
    for name, f in (("of_old", lambda: base.ColumnLayouts.of(book, tensors)), ("of_new", lambda: cl.ColumnLayouts.of(book, tensors)),
                    ("words_old", lambda: words_old(book)), ("words_new", lambda: words_new(book)))[::(1 if r % 2 else -1)]:
        t = time.perf_counter(); f(); res[name].append(time.perf_counter() - t)
for k, v in res.items():
    print(k, f"min {1e3*min(v):.2f} median {1e3*statistics.median(v):.2f} ms")
print("fresh columns", sum(f for _, _, f in book._log), "ids", sum(len(t) for t, _, f in book._log if f))
from itertools import compress, count, repeat
from operator import is_not
T = time.perf_counter
n = len(tensors)
t=T(); ids = list(map(id, tensors)); print("ids", 1e3*(T()-t))
t=T(); st = list(compress(count(), map(book._starts.__contains__, ids))); print("starts", 1e3*(T()-t), st)
out=[None]*n; placed=bytearray(n)
t=T()
for at in st:
    column, layout, _ = book._log[book._starts[ids[at]]]
    run = cl._run_in(tensors, column, at)
    print(" run", run, len(column))
    if run is not None and not any(placed[run]):
        out[run] = [layout]*len(column); placed[run] = b"\x01"*len(column)
print("runs", 1e3*(T()-t))
t=T(); d = book._loose.keys().isdisjoint(ids); print("disjoint", d, 1e3*(T()-t))
t=T(); out2 = list(map(book._loose.get, ids, out)); print("get", 1e3*(T()-t))
t=T(); x = 0 in placed; print("0 in", x, 1e3*(T()-t))
