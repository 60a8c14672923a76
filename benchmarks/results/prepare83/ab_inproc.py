"""In-process interleaved A/B (base function bodies imported from /tmp/base83 under another
name) of the pieces prepare83 changed, on inputs of the stamped 100k compile's sizes."""
import importlib.util, sys, time, random
import torch
sys.path.insert(0, "/work/wt/prepare83")
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m); return m
import derivgraph.runtime.watch as W_new, derivgraph.runtime.engine as E_new, derivgraph.runtime.accessors as A_new
W_old = load("/tmp/base83/derivgraph/runtime/watch.py", "watch_old")
E_old = load("/tmp/base83/derivgraph/runtime/engine.py", "engine_old")
A_old = load("/tmp/base83/derivgraph/runtime/accessors.py", "accessors_old")
class M: pass
owners = [M() for _ in range(25000)]
dicts100 = [o.__dict__ for o in owners for _ in range(4)]
dicts50 = [o.__dict__ for o in owners for _ in range(2)]
from derivgraph.column_layout import ColumnLayout
recs = [ColumnLayout(torch.Tensor, torch.float32, torch.Size((8,)), torch.device("cpu"), True) for _ in range(3)]
held = [recs[i % 2] for i in range(50000)] + [recs[2]] * 25000
shapes = [torch.Size((8,))] * 75000; numels = [8] * 75000; dtypes = [torch.float32] * 75000
runs = [(0, 50000), (50000, 75000)]
names = ["scale", "weight"] * 25000
vals = [{} for _ in range(25000)]
def put_old(out, rows, values):
    from collections import deque; import operator; from itertools import repeat
    deque(map(operator.setitem, repeat(out), rows, values), 0)
cases = {
    "_by_runs 100k": (lambda: W_old._by_runs(dicts100, None), lambda: W_new._by_runs(dicts100, None)),
    "_by_runs 50k": (lambda: W_old._by_runs(dicts50, None), lambda: W_new._by_runs(dicts50, None)),
    "Layouts 75k": (lambda: E_old.Layouts(dtypes, shapes, numels), lambda: E_new.Layouts(dtypes, shapes, numels, runs)),
    "rows store 2x25k": (lambda: [put_old([None] * 50000, r, vals) for r in A_old.by_name(names).values()],
                         lambda: [A_new.put_rows([None] * 50000, r, vals) for r in A_new.by_name(names).values()]),
}
for label, (old, new) in cases.items():
    assert label.startswith("Layouts") or label.startswith("rows") or old() == new() or label.startswith("_by_runs") and (old()[0] == new()[0] and list(old()[1]) == list(new()[1]))
    t = {"base": [], "mine": []}
    for _ in range(25):
        for k, f in (("base", old), ("mine", new)):
            a = time.perf_counter(); f(); t[k].append(time.perf_counter() - a)
    print(f"{label:18s} base {min(t['base'])*1e3:6.2f} ms  mine {min(t['mine'])*1e3:6.2f} ms (min of 25, interleaved)")
