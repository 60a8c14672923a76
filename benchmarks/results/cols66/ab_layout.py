"""In-process A/B: the column proof's layout sweep (``stamp_columns._all_layout``) over the
scaling model's 25k ``weight`` parameters, stride read by ``methodcaller("stride")`` (A) vs
``tensor_method((nn.Parameter,), "stride")`` (B); interleaved."""
import statistics
import sys
import time

from derivgraph.compiler.reads import layout
from derivgraph.column_layout import tensor_method
from derivgraph.compiler.stamp_columns import _all_layout, _stride
from derivgraph.tools.bench_scaling import scaling_model

model = scaling_model(25000)
got = [layer.weight for layer in model.layers]
_, shape, stride, dtype, device = layout(got[0])
fast = tensor_method((type(got[0]),), "stride")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 21
a_t, b_t = [], []
for _ in range(reps):
    t = time.perf_counter()
    a = _all_layout(got, shape, stride, dtype, device, _stride)
    a_t.append(time.perf_counter() - t)
    t = time.perf_counter()
    b = _all_layout(got, shape, stride, dtype, device, fast)
    b_t.append(time.perf_counter() - t)
    assert a is b is True
wins = sum(y < x for x, y in zip(a_t, b_t))
print(f"tensors {len(got)}: A methodcaller median {statistics.median(a_t)*1e3:.2f} ms, "
      f"B unbound median {statistics.median(b_t)*1e3:.2f} ms, B faster in {wins} of {reps} "
      "(the compile runs two such sweeps)")
