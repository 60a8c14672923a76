"""In-process A/B of ``filled_column`` on the scaling workload's own column (100k: 24,999 rows):
the base rule (``map(torch.clone)``) against ``torch._foreach_clone``, interleaved rounds, gc
off (as compile_plan runs). The values are captured from a real compile; the result checked
equal (bits, fresh storage, strides) before timing."""
import gc
import sys
import time

import torch

import derivgraph.adoption as ad
import derivgraph.planner as pl
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
captured = []
orig = ad.filled_column


def capture(values, kind, row_major=False):
    captured.append((list(values), kind, row_major))
    return orig(values, kind, row_major)


pl.filled_column = capture
pl.compile_plan(scaling_model(size // 4), [scaling_spec()])
pl.filled_column = orig
values, kind, row_major = captured[0]
print(f"column: {len(values)} rows, distinct value objects {len(set(map(id, values)))}, "
      f"{values[0].dtype} {tuple(values[0].shape)}")


def base(values, kind, row_major):
    return list(map(torch.clone, values))


new = ad.filled_column(values, kind, row_major)
ref = base(values, kind, row_major)
assert len(new) == len(ref)
assert all(a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
           and torch.equal(a, b) and a._base is None and a.storage_offset() == 0
           for a, b in zip(new, ref))
assert len({t.untyped_storage().data_ptr() for t in new}) == len(new)  # each its own
del new, ref
gc.disable()
times = {"base map(clone)": [], "new _foreach_clone": []}
for _ in range(rounds):
    for name, f in (("base map(clone)", base), ("new _foreach_clone", ad.filled_column)):
        start = time.perf_counter()
        out = f(values, kind, row_major)
        times[name].append(time.perf_counter() - start)
        del out
for name, ts in times.items():
    ts.sort()
    print(f"{name:20s} min {ts[0]*1e3:6.2f} ms  median {ts[len(ts)//2]*1e3:6.2f} ms")
