"""In-process A/B of the layout book (``ColumnLayouts``) over one 100k compile's calls.

A warm compile runs with every public method of this tree's ``ColumnLayouts`` recorded
(its arguments kept: the very tensors); the calls are then replayed, interleaved by round,
on a fresh book of the base tree's class (``--base``, loaded as a module of its own) and of
this tree's, timing the whole replay (gc off); every answer is asserted equal (records by
facts, ``of`` answers position by position) before timing.

    PYTHONPATH=. python3 benchmarks/results/layouts79/ab_book.py /tmp/base79 100000 21
"""
import gc
import importlib.util
import statistics
import sys
import time

import derivgraph.column_layout as mine
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

base_root, size, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
spec = importlib.util.spec_from_file_location("base_column_layout",
                                              f"{base_root}/derivgraph/column_layout.py")
base = importlib.util.module_from_spec(spec)
sys.modules["base_column_layout"] = base
spec.loader.exec_module(base)

METHODS = ["add", "admit", "common", "of", "note_addresses", "source_runs", "unproven_meta",
           "note_read_addresses", "note_whole", "whole", "addresses", "storages", "__bool__",
           "__len__"]
calls = []
C = mine.ColumnLayouts
origs = {m: getattr(C, m) for m in METHODS if hasattr(C, m)}
depth = [0]


def spy(name, fn):
    def wrapped(self, *a, **k):
        if depth[0] == 0:
            calls.append((name, a, k))
        depth[0] += 1
        try:
            return fn(self, *a, **k)
        finally:
            depth[0] -= 1
    return wrapped


compile_plan(scaling_model(size // 4), [scaling_spec()])  # warm
for m, fn in origs.items():
    setattr(C, m, spy(m, fn))
model = scaling_model(size // 4)
plan = compile_plan(model, [scaling_spec()])
for m, fn in origs.items():
    setattr(C, m, fn)
# the source_runs answers the compile passed to note_read_addresses are the book's own
print("calls:", {m: sum(1 for c in calls if c[0] == m) for m in METHODS})


def facts(r):
    if isinstance(r, list):
        return [facts(x) for x in r]
    return r.facts if hasattr(r, "facts") else r


def replay(cls, check=False):
    book = cls()
    out = []
    for name, a, k in calls:
        if name == "__bool__" and not hasattr(cls, "__bool__"):
            name = "__len__"
        if cls is base.ColumnLayouts:
            k = {key: v for key, v in k.items() if key != "fresh"}
        got = getattr(book, name)(*a, **k)
        if check:
            if name == "__len__":
                got = bool(got)
            out.append((name, facts(got)))
    return out


a_out, b_out = replay(base.ColumnLayouts, True), replay(mine.ColumnLayouts, True)
assert len(a_out) == len(b_out)
for x, y in zip(a_out, b_out):
    if x[0] in ("__bool__", "__len__"):
        assert x[1] == y[1]
    elif x[0] not in ("whole",):
        assert x == y, (x[0],)
print("answers equal:", len(a_out))
gc.collect()
gc.disable()
times = {"A": [], "B": []}
for r in range(rounds + 2):
    for tag, cls in (("A", base.ColumnLayouts), ("B", mine.ColumnLayouts)) if r % 2 == 0 \
            else (("B", mine.ColumnLayouts), ("A", base.ColumnLayouts)):
        t = time.perf_counter()
        replay(cls)
        dt = time.perf_counter() - t
        if r >= 2:
            times[tag].append(dt)
        gc.collect()
gc.enable()
a, b = times["A"], times["B"]
print(f"A (base) median {statistics.median(a) * 1e3:.2f} ms, B (mine) median "
      f"{statistics.median(b) * 1e3:.2f} ms; B faster in {sum(x > y for x, y in zip(a, b))}"
      f" of {len(a)} rounds")
