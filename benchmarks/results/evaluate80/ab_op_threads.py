"""The two column ops of the scaling workload (1.0 / scale, scale * weight on [25000, 8]
float32) timed with torch's intra-op threads as set (2 here) and with 1, interleaved."""
import gc
import time

import torch

gc.disable()
a, b = torch.rand(25000, 8) + 0.5, torch.rand(25000, 8)
rows = list(torch.rand(25000, 8).unbind(0))  # each a view; a stack reads them all
n0 = torch.get_num_threads()
res = {n0: [], 1: []}
stk = {n0: [], 1: []}
for _ in range(15):
    for n in (n0, 1):
        torch.set_num_threads(n)
        s = time.perf_counter()
        c = 1.0 / a
        d = a * b
        res[n].append(time.perf_counter() - s)
        del c, d
        s = time.perf_counter()
        e = torch.stack(rows)
        stk[n].append(time.perf_counter() - s)
        del e
for n, ts in res.items():
    ts.sort()
    st = sorted(stk[n])
    print(f"threads {n}: stack of 25000 rows min {st[0]*1e3:.3f} ms median {st[len(st)//2]*1e3:.3f} ms")
    print(f"threads {n}: the two ops min {ts[0]*1e3:.3f} ms median {ts[len(ts)//2]*1e3:.3f} ms")
