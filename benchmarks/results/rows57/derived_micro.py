"""Micro-benchmark (rows57, task 2): 100k DerivedNodes made eagerly against held variants (an
object of a per-column subclass, some fields set by C-level sweeps, the rest left for a lazy
read), alone and followed by the sweeps every compile does after (input by
place_made_inputs, meta and device by infer._set_all). Process seconds, gc off.

    PYTHONPATH=TREE python3 derived_micro.py > derived_micro.txt
"""
import gc, time, torch
from collections import deque
from itertools import repeat
from typing import ClassVar
from derivgraph.compiler.graph import DerivedNode
from derivgraph.spec.model import DerivedTensor
from derivgraph.compiler.graph import tensor_kind
gc.disable()
n = 100000
decl = DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale")
ids = [f"layers.{i}.inv" for i in range(n)]
paths = [f"layers.{i}" for i in range(n)]
bounds = [object() for _ in range(n)]
devs = [torch.device("cpu")] * n
params = [{} for _ in range(n)]
class H(DerivedNode):
    __slots__ = ()
H.decl = decl
H._kind = tensor_kind(decl)
def eager():
    return list(map(DerivedNode, ids, bounds, repeat(decl), paths, repeat(None), devs, params))
def held():
    out = list(map(object.__new__, repeat(H, n)))
    deque(map(setattr, out, repeat("id"), ids), maxlen=0)
    deque(map(setattr, out, repeat("owner_path"), paths), maxlen=0)
    return out
for r in range(5):
    for name, f in (("eager", eager), ("held", held)):
        t = time.process_time(); x = f(); d = time.process_time() - t
        print(name, round(d, 4)); del x
def alloc():
    return list(map(object.__new__, repeat(H, n)))
def one_sweep():
    out = list(map(object.__new__, repeat(H, n)))
    deque(map(setattr, out, repeat("id"), ids), maxlen=0)
    return out
for r in range(5):
    for name, f in (("eager", eager), ("held(id,owner_path)", held), ("held(id)", one_sweep), ("alloc only", alloc)):
        t = time.process_time(); x = f(); d = time.process_time() - t
        print(name, round(d, 4)); del x
class H2(DerivedNode):
    __slots__ = ()
H2._kind = tensor_kind(decl)
def held4():
    out = list(map(object.__new__, repeat(H2, n)))
    for name, col in (("id", ids), ("bound", bounds), ("decl", [decl] * n), ("owner_path", paths)):
        deque(map(setattr, out, repeat(name), col), maxlen=0)
    return out
def then_infer(make):
    def f():
        out = make()
        deque(map(setattr, out, repeat("input"), ids), maxlen=0)
        deque(map(setattr, out, repeat("meta"), ids), maxlen=0)
        deque(map(setattr, out, repeat("device"), devs), maxlen=0)
        return out
    return f
print("--- with the later input/meta/device sweeps")
for r in range(5):
    for name, f in (("eager+", then_infer(eager)), ("held4", held4), ("held4+", then_infer(held4)), ("held(id,owner_path)+", then_infer(held))):
        t = time.process_time(); x = f(); d = time.process_time() - t
        print(name, round(d, 4)); del x
