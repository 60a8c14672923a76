import gc, time, sys
from torch._C._dynamo.guards import TensorGuards as TG
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.runtime import engine
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
times = {}
def variant(name):
    def build(*ts, dynamic_dims_sizes, dynamic_dims_strides):
        a = time.perf_counter()
        if name == "now":
            g = TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=dynamic_dims_strides)
        elif name == "exact":
            g = TG(*ts, dynamic_dims_sizes=None, dynamic_dims_strides=None)
        elif name == "first_any":
            f = [ts[0]] * len(ts)
            g = TG(*f, dynamic_dims_sizes=None, dynamic_dims_strides=dynamic_dims_strides)
        elif name == "first_exact":
            f = [ts[0]] * len(ts)
            g = TG(*f, dynamic_dims_sizes=None, dynamic_dims_strides=None)
        times.setdefault(name, []).append(time.perf_counter() - a)
        return g
    return build
names = ["now", "exact", "first_any", "first_exact"]
for r in range(3):
    for name in (names if r % 2 == 0 else names[::-1]):
        model = scaling_model(25000)
        gc.collect()
        engine._TensorGuards = variant(name)
        p = compile_plan(model, [spec])
        del p, model
for k, v in times.items():
    print(k, " ".join(f"{x*1000:.1f}" for x in v))
