"""The young lists and tuples after one warm compile (argv[1], default 100000) with 1000 or
more items: length, item type, and who refers to them (an attribute name where the referrer
is an object's __dict__, else the referrer's type). Items visited in all: what the first
gc.collect(0) walks."""
import collections, gc, sys
import torch
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
plan = compile_plan(model, [spec])
objs = gc.get_objects(0)
big = [o for o in objs if type(o) in (list, tuple) and len(o) >= 1000]
tot = collections.Counter()
for o in objs:
    if type(o) in (list, tuple, dict):
        tot[type(o).__name__] += len(o)
print("items in young containers:", dict(tot))
del objs
def owner(o):
    out = []
    for r in gc.get_referrers(o):
        if r is big: continue
        if type(r) is dict:
            k = [k for k, v in r.items() if v is o][:1]
            holders = [type(x).__qualname__ for x in gc.get_referrers(r)
                       if getattr(x, "__dict__", None) is r][:1]
            out.append(f"{holders[0] if holders else 'dict'}.{str(k[0])[:40] if k else '?'}")
        elif type(r).__name__ == "frame":
            continue
        else:
            slot = ""
            for name in getattr(type(r), "__slots__", ()) or ():
                if getattr(r, name, None) is o: slot = "." + name
            out.append(type(r).__qualname__ + slot + (f"[{len(r)}]" if type(r) in (list, tuple) else ""))
    return out[:3]
rows = collections.Counter()
for o in big:
    item = collections.Counter(type(x).__qualname__ for x in o[:50]).most_common(1)[0][0]
    rows[(type(o).__name__, len(o), item, tuple(owner(o)))] += 1
n = 0
for (kind, length, item, own), c in sorted(rows.items(), key=lambda kv: -kv[0][1] * kv[1]):
    n += length * c
    print(f"{c:3d} x {kind}[{length}] of {item:14s} <- {', '.join(own)}")
print("items in these:", n)
