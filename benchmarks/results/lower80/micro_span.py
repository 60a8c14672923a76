"""Micro A/B of the one piece changed: a flat run's operand span at 100k (two source columns
of 25k rows, chunks of 4096), read per tensor (old) vs from the book's noted addresses
(new: the lookups in _run_facts, the cut per chunk, the join), interleaved rounds."""
import statistics, sys, time
import torch
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler import flat
from derivgraph.compiler.codegen import _noted
from derivgraph.tools.bench_scaling import scaling_model

model = scaling_model(25000)
a = [layer.scale for layer in model.layers]
b = [layer.weight for layer in model.layers]
book = ColumnLayouts()
for col in (a[1:], b[1:]):
    f = col[0]
    book.add(col, ColumnLayout(type(f), f.dtype, f.shape, f.device, True), source=True)
    book.note_read_addresses(col, [t.data_ptr() for t in col])
dtype, shape, n, step = a[0].dtype, a[0].shape, len(a), 4096
values = a + b


def old():
    for s in range(0, n, step):
        e = min(n, s + step)
        flat.span_of_run(values[s:e] + values[n + s:n + e], dtype, shape)


def new():
    aa, bb = values[:n], values[n:]
    ap, bp = _noted(book, aa), _noted(book, bb)
    for s in range(0, n, step):
        e = min(n, s + step)
        flat.span_of_run(values[s:e] + values[n + s:n + e], dtype, shape, ap[s:e] + bp[s:e])


times = {"old": [], "new": []}
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    for name, fn in ((("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old))):
        t = time.perf_counter(); fn(); times[name].append(time.perf_counter() - t)
for name, ts in times.items():
    print(f"{name}: median {1e3 * statistics.median(ts):.2f} ms  min {1e3 * min(ts):.2f} ms")
