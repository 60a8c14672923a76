import time, torch, gc
from torch._C._dynamo.guards import TensorGuards as TG
n=75000
ts=[torch.empty(16) for _ in range(n//3)]+[torch.empty(4,4) for _ in range(n//3)]+[torch.empty(8) for _ in range(n//3)]
dims=[t.dim() for t in ts]
strides={d:[None]*d for d in set(dims)}
anys=[strides[d] for d in dims]
sizes=[list(t.shape) for t in ts]
same=[ts[0]]*n
def t(f,k=5):
    b=[]
    for _ in range(k):
        a=time.perf_counter(); f(); b.append(time.perf_counter()-a)
    return min(b)
gc.disable()
print("now", t(lambda: TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=anys)))
print("strides None", t(lambda: TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=None)))
print("sizes given", t(lambda: TG(*ts, dynamic_dims_sizes=sizes, dynamic_dims_strides=anys)))
print("same tensor", t(lambda: TG(*same, dynamic_dims_sizes=None, dynamic_dims_strides=[anys[0]]*n)))
print("star-args only", t(lambda: (lambda *a: None)(*ts)))
g=TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=anys)
print("check", t(lambda: g.check(*ts)))
print("map dtype", t(lambda: list(map(lambda x: x.dtype, ts))))
