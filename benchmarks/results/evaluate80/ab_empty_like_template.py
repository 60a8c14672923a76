import torch, time, gc
from itertools import repeat
gc.disable()
out = torch.rand(25000, 8)
vals = list(out.unbind(0)); n = len(vals)
def t(f, k=9):
    ts = []
    for _ in range(k):
        s = time.perf_counter(); r = f(); ts.append(time.perf_counter() - s); del r
    ts.sort(); return ts[0], ts[k//2]
fs = {'map empty_like(values)': lambda: list(map(torch.empty_like, vals)),
      'map empty_like(repeat first)': lambda: list(map(torch.empty_like, repeat(vals[0], n)))}
for r in range(3):
    for k, f in fs.items():
        a, b = t(f); print(r, k, f"min {a*1e3:.2f} med {b*1e3:.2f}")
