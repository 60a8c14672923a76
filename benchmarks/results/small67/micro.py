"""Interleaved A/B micro of small67's per-row sweeps (old rule vs new rule, same process)."""
import gc, statistics, sys, time
from dataclasses import dataclass
from itertools import repeat, compress
from operator import methodcaller, attrgetter
import torch
from derivgraph.column_layout import tensor_method
from derivgraph.addresses import address_of, data_ptrs, AtAddresses

_dp, _us = methodcaller("data_ptr"), methodcaller("untyped_storage")
_is_meta = attrgetter("is_meta")
def old_data_ptrs(values):
    if all(map(isinstance, values, repeat(torch.Tensor))) and not any(map(_is_meta, values)):
        return list(map(_dp, values))
    return list(map(address_of, values))

big = [torch.zeros(4) for _ in range(50000)]
params = [torch.nn.Parameter(torch.zeros(4)) for _ in range(10)]
small = [torch.zeros(4) for _ in range(10)]

@dataclass
class Old:
    spec: object
    module_path: str
    module: object
@dataclass(slots=True)
class New:
    spec: object
    module_path: str
    module: object
paths = [f"m.{i}" for i in range(25000)]
mods = [object() for _ in range(25000)]
spec = object()

def pair(name, a, b, reps, M=31):
    ta, tb = [], []
    for _ in range(M):
        for which, f, out in ((0, a, ta), (1, b, tb)):
            gc.collect()
            t = time.perf_counter()
            for _ in range(reps):
                f()
            out.append((time.perf_counter() - t) / reps)
    wins = sum(y < x for x, y in zip(ta, tb))
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"{name}: old {ma*1e6:.2f} us, new {mb*1e6:.2f} us ({ma/mb:.2f}x), new faster {wins} of {M}")

assert old_data_ptrs(big) == data_ptrs(big) == list(map(address_of, big))
pair("record_startup 50k sources: map(address_of) vs data_ptrs", lambda: list(map(address_of, big)), lambda: data_ptrs(big), 3)
pair("data_ptrs 50k: methodcaller vs tensor_method", lambda: old_data_ptrs(big), lambda: data_ptrs(big), 3)
pair("data_ptrs 10 params", lambda: old_data_ptrs(params), lambda: data_ptrs(params), 2000)
pair("untyped_storage 50k: methodcaller vs tensor_method", lambda: list(map(_us, big)),
     lambda: list(map(tensor_method(set(map(type, big)), "untyped_storage"), big)), 3)
pair("untyped_storage 10: methodcaller vs tensor_method (decided per call)", lambda: list(map(_us, small)),
     lambda: list(map(tensor_method(set(map(type, small)), "untyped_storage"), small)), 2000)
def intact_cold(ts):
    ptrs = data_ptrs(ts)
    def f():
        a = AtAddresses(ts, ptrs, hold=True)
        return a.intact()
    return f
pair("AtAddresses(10, hold=True).intact() first call (words taken) [same code both: noise floor]", intact_cold(small), intact_cold(small), 300)
pair("25k BoundSpec: dataclass vs slots", lambda: list(map(Old, repeat(spec), paths, mods)), lambda: list(map(New, repeat(spec), paths, mods)), 3)
ob, nb = list(map(Old, repeat(spec), paths, mods)), list(map(New, repeat(spec), paths, mods))
_S = attrgetter("spec")
pair("25k BoundSpec .spec sweep: dataclass vs slots", lambda: list(map(_S, ob)), lambda: list(map(_S, nb)), 10)
