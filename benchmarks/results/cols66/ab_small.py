"""In-process A/Bs of cols66's small sweeps on the 100k scaling model (25k layers), each the
replaced per-row form (A) against the sweep (B), interleaved, the answers asserted equal:
FlatCopy's held storages (methodcaller vs column_layout.tensor_method) over the 25k weights;
and ModuleOwners' own-class test (a generator vs one sweep) over the 25k layers, dropped on
its numbers (the sweep was slower: a specialized ``o.__class__`` read beats attrgetter)."""
import operator
import statistics
import sys
import time
from operator import methodcaller

import gc
from derivgraph.column_layout import tensor_method
from derivgraph.tools.bench_scaling import scaling_model

gc.disable()  # as compile_plan runs (its objects are freed by refcount)

model = scaling_model(25000)
weights = [layer.weight for layer in model.layers]
layers = list(model.layers)
_CLASS = operator.attrgetter("__class__")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 21
arms = {
    "FlatCopy held storages": (
        lambda: list(map(methodcaller("untyped_storage"), weights)),
        lambda: list(map(tensor_method(set(map(type, weights)), "untyped_storage"), weights)),
        lambda a, b: list(map(operator.methodcaller("data_ptr"), a))
        == list(map(operator.methodcaller("data_ptr"), b))),
    "ModuleOwners own classes": (
        lambda: not any(o.__class__ is not type(o) for o in layers),
        lambda: all(map(operator.is_, map(_CLASS, layers), map(type, layers))),
        operator.eq),
}
for name, (a_fn, b_fn, same) in arms.items():
    a_t, b_t = [], []
    for _ in range(reps):
        t = time.perf_counter()
        a = a_fn()
        a_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = b_fn()
        b_t.append(time.perf_counter() - t)
        assert same(a, b)
    wins = sum(y < x for x, y in zip(a_t, b_t))
    print(f"{name}: A median {statistics.median(a_t)*1e3:.2f} ms, B median "
          f"{statistics.median(b_t)*1e3:.2f} ms, B faster in {wins} of {reps}")
