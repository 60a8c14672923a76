"""Cost of one C-level sweep of each per-tensor torch property over 75k small CPU tensors
(what every layout check of the lowering half pays per storage). Process-independent of the
tree. ``python3 attr_costs.py``; ms per sweep, median of 5."""

import statistics
import time
from operator import attrgetter

import torch

tensors = [torch.empty(8) for _ in range(75000)]


def sweep(name, fn):
    times = []
    for _ in range(5):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    print(f"{name:22s} {statistics.median(times) * 1000:6.1f} ms")  # noqa: T201


for attr in ("dtype", "device", "shape", "is_meta", "is_quantized", "is_sparse"):
    get = attrgetter(attr)
    sweep(attr, lambda get=get: list(map(get, tensors)))
for method in (torch.Tensor.numel, torch.Tensor.dim, torch.Tensor.stride, torch.Tensor.size,
               torch.Tensor.data_ptr, torch.Tensor.is_contiguous, torch.Tensor.untyped_storage):
    sweep(f"{method.__name__}()", lambda method=method: list(map(method, tensors)))
sweep("id", lambda: list(map(id, tensors)))
