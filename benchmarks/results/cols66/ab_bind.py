"""In-process A/B: the base's ``compiler/bind.py`` (A: loaded from BASE_TREE, default
/tmp/base66, under another name; its imports are this tree's) vs this tree's (B):
``match_specs`` and ``check_bindings`` on the 100k scaling model (25k layers), interleaved,
the answers asserted equal."""
import importlib.util
import statistics
import sys
import time

import gc
from derivgraph.compiler import bind as mine
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

gc.disable()  # as compile_plan runs (its objects are freed by refcount)

base_tree = sys.argv[2] if len(sys.argv) > 2 else "/tmp/base66"
load = importlib.util.spec_from_file_location("base_bind", f"{base_tree}/derivgraph/compiler/bind.py")
base = importlib.util.module_from_spec(load)
sys.modules["base_bind"] = base  # the dataclass decorator looks its module up
load.loader.exec_module(base)
model, spec = scaling_model(25000), scaling_spec()
bound = mine.match_specs(model, [spec])
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
arms = {
    "match_specs": (lambda m: m.match_specs(model, [spec]),
                    lambda a, b: [(x.spec, x.module_path, x.module) for x in a]
                    == [(x.spec, x.module_path, x.module) for x in b]),
    "check_bindings": (lambda m: m.check_bindings(bound), lambda a, b: a == b),
}
for name, (run, same) in arms.items():
    a_t, b_t = [], []
    for _ in range(reps):
        t = time.perf_counter()
        a = run(base)
        a_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = run(mine)
        b_t.append(time.perf_counter() - t)
        assert same(a, b)
    wins = sum(y < x for x, y in zip(a_t, b_t))
    print(f"{name}: A base median {statistics.median(a_t)*1e3:.2f} ms, B median "
          f"{statistics.median(b_t)*1e3:.2f} ms, B faster in {wins} of {reps}")
