import runpy, sys, time, collections
sys.argv = ["x", "/tmp/base79", "100000", "1"]
g = runpy.run_path("benchmarks/results/layouts79/ab_book.py")
calls, base, mine = g["calls"], g["base"], g["mine"]
import gc; gc.disable()
for cls in (base.ColumnLayouts, mine.ColumnLayouts, base.ColumnLayouts, mine.ColumnLayouts):
    book = cls(); per = collections.Counter()
    for name, a, k in calls:
        if name == "__bool__" and not hasattr(cls, "__bool__"): name = "__len__"
        if cls is base.ColumnLayouts: k = {}  if "fresh" in k else k
        t = time.perf_counter(); getattr(book, name)(*a, **k); per[name] += time.perf_counter() - t
    print(cls.__module__, {m: round(v*1e3, 2) for m, v in per.most_common()})
