"""The fresh-column book against the base tree's ColumnLayouts (loaded from /tmp/base79): the test's random books (300 seeds) replayed on both, every common and of answer compared.

    PYTHONPATH=. python3 benchmarks/results/layouts79/vs_base.py
"""
import importlib.util, sys, random
spec = importlib.util.spec_from_file_location("bcl", "/tmp/base79/derivgraph/column_layout.py")
b = importlib.util.module_from_spec(spec); sys.modules["bcl"] = b; spec.loader.exec_module(b)
import tests.runtime.test_book_fresh_columns as T
import derivgraph.column_layout as cl
orig_add, orig_admit = cl.ColumnLayouts.add, cl.ColumnLayouts.admit
bad = 0; n = 0
for seed in range(300):
    log = []
    def add(self, t, l, **k): log.append(("add", t, l)); return orig_add(self, t, l, **k)
    def admit(self, t, l): log.append(("admit", t, l)); return orig_admit(self, t, l)
    cl.ColumnLayouts.add, cl.ColumnLayouts.admit = add, admit
    book, ref, columns, every = T._built(seed)
    cl.ColumnLayouts.add, cl.ColumnLayouts.admit = orig_add, orig_admit
    base = b.ColumnLayouts()
    for kind, t, l in log:
        if kind == "add": base.add(t, l)
        else: assert base.admit(t, l)
    assert len(base) == len(book)
    for q in T._queries(random.Random(seed), columns, every):
        n += 1
        if not (book.common(q) is base.common(q)) or book.of(q) != base.of(q): bad += 1
print("queries", n, "differ", bad)
