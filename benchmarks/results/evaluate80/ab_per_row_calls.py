import torch, time, gc
from itertools import repeat
gc.disable()
out = torch.rand(25000, 8)
vals = list(out.unbind(0))
n=len(vals); size = vals[0].shape; t0 = vals[0]
def t(f, n=7):
    best = 1e9
    for _ in range(n):
        s = time.perf_counter(); r = f(); best = min(best, time.perf_counter() - s); del r
    return best
fs = {
 'map empty_like': lambda: list(map(torch.empty_like, vals)),
 'map Tensor.new_empty(size)': lambda: list(map(t0.new_empty, repeat(size, n))),
 'map torch.empty(size)': lambda: list(map(torch.empty, repeat(size, n))),
 'map torch.empty(tuple)': lambda: list(map(torch.empty, repeat(tuple(size), n))),
 'map clone': lambda: list(map(torch.clone, vals)),
 'map Tensor.clone': lambda: list(map(torch.Tensor.clone, vals)),
 'foreach_clone': lambda: list(torch._foreach_clone(vals)),
 'foreach_clone tuple': lambda: torch._foreach_clone(vals),
}
for r in range(3):
    for k, f in fs.items():
        print(r, k, round(t(f)*1e3, 2), 'ms')
