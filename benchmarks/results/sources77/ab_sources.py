"""In-process A/B of the piece changed (interleaved rounds): base's holder_dicts + the bind's
per-source records vs this branch's columns, over the 50k sources of the 100k scaling model;
and the gen-0 collection each leaves (the objects kept)."""
import gc
import operator
import sys
import time
from collections import deque
from itertools import repeat

from derivgraph.compiler.owners import RegistryReads, registries_holding
from derivgraph.paths import MISSING, holder_dict
from derivgraph.runtime.accessors import by_name, holder_dicts
from derivgraph.runtime.holders import BoundSources
from derivgraph.tools.bench_scaling import scaling_model

_first, _second = operator.itemgetter(0), operator.itemgetter(1)

def old_holder_dicts(owners, names):
    out = [None] * len(names)
    reads = RegistryReads()
    for name, rows in by_name(names).items():
        found = list(map(owners.__getitem__, rows))
        where = registries_holding(found, name, reads)
        if where is None:
            for i, owner in zip(rows, found):
                out[i] = holder_dict(owner, name) if owner is not MISSING else None
        else:
            deque(map(operator.setitem, repeat(out), rows, zip(where[1], repeat(name))), 0)
    return out

def old(owners, paths, names, tensors, ptrs):
    where = old_holder_dicts(owners, names)
    kept = list(zip(paths, where, tensors, ptrs))
    checks = (list(map(_first, where)), list(map(_second, where)))
    return kept, checks

def new(owners, paths, names, tensors, ptrs):
    where = holder_dicts(owners, names)
    bound = BoundSources(paths, where, names, tensors, ptrs)
    assert not bound.outside_dicts()
    return bound, (where, names)

model = scaling_model(25000)
paths = [f"layers.{i}.{n}" for i in range(25000) for n in ("weight", "scale")]
owners = [model.layers[i] for i in range(25000) for _ in (0, 1)]
names = [p.rpartition(".")[2] for p in paths]
tensors = [getattr(o, n) for o, n in zip(owners, names)]
ptrs = [t.data_ptr() for t in tensors]
a, b = old(owners, paths, names, tensors, ptrs), new(owners, paths, names, tensors, ptrs)
assert all(x is y for x, y in zip(a[1][0], b[1][0])) and a[1][1] == b[1][1]
del a, b
res = {"old": [], "new": [], "old_gc": [], "new_gc": []}
gc.collect()
gc.disable()
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 7):
    for name, f in (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old)):
        gc.collect()
        t = time.perf_counter()
        kept = f(owners, paths, names, tensors, ptrs)
        res[name].append(time.perf_counter() - t)
        t = time.perf_counter()
        gc.collect(0)
        res[name + "_gc"].append(time.perf_counter() - t)
        del kept
for k, v in res.items():
    v = sorted(v)
    print(f"{k:7s} median {v[len(v)//2]*1e3:7.2f} ms  min {v[0]*1e3:7.2f} ms")
