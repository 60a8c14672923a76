"""Young lists/tuples (>= 1000 items) after one warm compile (argv[1], default 100000) that
hold the very same items in the same order as another (copies: one could be shared), grouped;
each group with its holders (attribute names). Items in copies = what sharing would save the
first gc.collect(0)."""
import collections, gc, sys
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
del objs
groups = collections.defaultdict(list)
for o in big:
    groups[tuple(map(id, o))].append(o)
def holder(o):
    out = []
    for r in gc.get_referrers(o):
        if r is big or type(r).__name__ == "frame" or (type(r) is list and len(r) > 50 and r is not o and any(x is o for x in r[:0])):
            continue
        if type(r) is dict:
            k = [k for k, v in r.items() if v is o][:1]
            hs = [type(x).__qualname__ for x in gc.get_referrers(r) if getattr(x, "__dict__", None) is r][:1]
            out.append(f"{hs[0] if hs else 'dict'}.{str(k[0])[:30] if k else '?'}")
        else:
            slot = next((n for n in getattr(type(r), "__slots__", ()) or () if getattr(r, n, None) is o), "")
            out.append(type(r).__qualname__ + ("." + slot if slot else ""))
    return "/".join(x for x in out if not x.startswith("list") and x != "tuple")[:80] or "?"
saved = 0
rows = []
for key, os_ in groups.items():
    if len(os_) > 1:
        extra = (len(os_) - 1) * len(os_[0])
        saved += extra
        item = type(os_[0][0]).__qualname__
        rows.append((extra, f"{len(os_)} copies of {len(os_[0])} {item}: " + "; ".join(holder(o) for o in os_)))
for extra, line in sorted(rows, reverse=True):
    print(f"{extra:8d} {line}")
print(f"items in copies (beyond the first of each): {saved}; young big containers: {len(big)}, "
      f"items {sum(map(len, big))}")
