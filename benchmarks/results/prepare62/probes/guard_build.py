"""The layout guard's construction (TorchDynamo's ``TensorGuards``) over 75k CPU tensors of three
layouts, 5 alternating rounds, process time: the size lists given per tensor (the base tree's
form) against ``dynamic_dims_sizes=None`` (each check takes its tensor's sizes: this branch),
against no strides list either (static strides: a stricter guard, not built), and the same over
3 representative tensors repeated 75k times (one per layout, as a guard built from the book's
records would have to be: TensorGuards takes a tensor per argument). Check cost after."""

from __future__ import annotations

import statistics
import time

import torch
from torch._C._dynamo.guards import TensorGuards

N = 75000
ts = [torch.empty(4, 8) for _ in range(N // 3)] + [torch.empty(16) for _ in range(N // 3)] \
    + [torch.empty(2, 3, 4) for _ in range(N // 3)]
reps = [ts[0]] * (N // 3) + [ts[N // 3]] * (N // 3) + [ts[-1]] * (N // 3)
shapes = [t.shape for t in ts]
sizes = {s: list(s) for s in set(shapes)}
strides = {s: [None] * len(s) for s in sizes}
S, T = list(map(sizes.__getitem__, shapes)), list(map(strides.__getitem__, shapes))
arms = {
    "sizes lists (base)": lambda: TensorGuards(*ts, dynamic_dims_sizes=S, dynamic_dims_strides=T),
    "sizes None (mine)": lambda: TensorGuards(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=T),
    "both None (not exact)": lambda: TensorGuards(*ts, dynamic_dims_sizes=None,
                                                  dynamic_dims_strides=None),
    "3 reps, sizes None": lambda: TensorGuards(*reps, dynamic_dims_sizes=None,
                                               dynamic_dims_strides=T),
}
times: dict[str, list[float]] = {k: [] for k in arms}
for r in range(5):
    for name, fn in (list(arms.items()) if r % 2 == 0 else list(arms.items())[::-1]):
        t0 = time.process_time()
        g = fn()
        times[name].append(time.process_time() - t0)
for name, v in times.items():
    print(f"{name:24s} median {statistics.median(v):.4f} s  {[round(x, 4) for x in v]}")
g = arms["sizes None (mine)"]()
t0 = time.process_time()
ok = g.check(*ts)
print(f"check of 75k (mine's guard): {time.process_time() - t0:.4f} s, passed {ok}")
g0 = arms["sizes lists (base)"]()
t0 = time.process_time()
ok = g0.check(*ts)
print(f"check of 75k (base's guard): {time.process_time() - t0:.4f} s, passed {ok}")
