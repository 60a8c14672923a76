import time, gc, sys
from collections import Counter
import torch
from torch._C._dynamo.guards import TensorGuards as TG
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.runtime.engine import _any_strides
spec = scaling_spec()
plan = compile_plan(scaling_model(25000), [spec])
rt = plan._refill_table
ts = rt.storages; dims = rt._layouts._dims
print(len(ts), Counter((tuple(t.shape), t.stride(), t.is_contiguous()) for t in ts).most_common(8))
fresh = [t.clone() for t in ts]
def tm(f, k=7):
    b=[]
    for _ in range(k):
        a=time.perf_counter(); f(); b.append(time.perf_counter()-a)
    return min(b)
gc.collect(); gc.disable()
for r in range(2):
    print("any-strides build", tm(lambda: TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=_any_strides(dims))))
    print("exact-strides build", tm(lambda: TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=None)))
ga = TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=_any_strides(dims))
ge = TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=None)
for r in range(2):
    print("any check", tm(lambda: ga.check(*fresh)), ga.check(*fresh))
    print("exact check", tm(lambda: ge.check(*fresh)), ge.check(*fresh))
