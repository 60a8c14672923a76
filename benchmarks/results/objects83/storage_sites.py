"""Who makes the compile's UntypedStorage objects: every ``untyped_storage()`` call during one
warm compile at argv[1] (default 100000), by caller line, with how many storage objects were
new (first seen) there. A storage's Python object is preserved with its StorageImpl (torch's
PyObject preservation), so the first caller makes the one object all later callers get."""
import collections, gc, sys, time
import torch
real = torch.Tensor.untyped_storage
calls, new, seen, on = collections.Counter(), collections.Counter(), set(), [False]
def spy(t):
    s = real(t)
    if on[0]:
        f = sys._getframe(1)
        site = f"{f.f_code.co_filename.split('derivgraph/')[-1]}:{f.f_lineno}({f.f_code.co_name})"
        if 'builtin' in site or 'map' in site:
            f = f.f_back
        calls[site] += 1
        if id(s) not in seen:
            seen.add(id(s)); new[site] += 1
    return s
torch.Tensor.untyped_storage = spy
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
base = sum(type(o) is torch.UntypedStorage for o in gc.get_objects(0))
on[0] = True
plan = compile_plan(model, [spec])
on[0] = False
young = sum(type(o) is torch.UntypedStorage for o in gc.get_objects(0))
print(f"young UntypedStorage after the compile: {young} (before: {base}); distinct seen {len(seen)}")
for site, n in calls.most_common():
    print(f"{n:8d} calls {new[site]:8d} new  {site}")
