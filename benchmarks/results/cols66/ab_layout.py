"""In-process A/B: the column proof's layout sweep over the scaling model's 25k ``weight``
parameters: the base's ``stamp_columns._all_layout`` (A, copied here: the stride read by
``methodcaller("stride")``) vs this tree's (B: ``column_layout.tensor_method``, the unbound
``torch.Tensor.stride`` for a plain class); interleaved. The compile runs two such sweeps."""
import statistics
import sys
import time
from operator import attrgetter, methodcaller
from typing import Any

import gc
from derivgraph.compiler.reads import layout
from derivgraph.compiler.stamp_columns import _all_layout
from derivgraph.tools.bench_scaling import scaling_model

gc.disable()  # as compile_plan runs (its objects are freed by refcount)

_shape, _dtype, _device = attrgetter("shape"), attrgetter("dtype"), attrgetter("device")
_stride = methodcaller("stride")


def base_all_layout(got: list[Any], shape: Any, stride: Any, dtype: Any, device: Any) -> bool:
    n = len(got)
    return list(map(_shape, got)) == [shape] * n and list(map(_stride, got)) == [stride] * n \
        and list(map(_dtype, got)) == [dtype] * n and list(map(_device, got)) == [device] * n


model = scaling_model(25000)
got = [layer.weight for layer in model.layers]
_, shape, stride, dtype, device = layout(got[0])
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 21
a_t, b_t = [], []
for _ in range(reps):
    t = time.perf_counter()
    a = base_all_layout(got, shape, stride, dtype, device)
    a_t.append(time.perf_counter() - t)
    t = time.perf_counter()
    b = _all_layout(got, shape, stride, dtype, device)
    b_t.append(time.perf_counter() - t)
    assert a is b is True
wins = sum(y < x for x, y in zip(a_t, b_t))
print(f"tensors {len(got)}: A base median {statistics.median(a_t)*1e3:.2f} ms, "
      f"B tensor_method median {statistics.median(b_t)*1e3:.2f} ms, B faster in {wins} of {reps}")
