"""In-process A/B at 100k: the stamped rows' meta values put in the env (base: one dict.update) vs kept aside (this tree: KeptAside.defer); make time, then the young collection with the env alive."""
import gc, sys, time, statistics, os
from functools import partial
from itertools import chain
from operator import mul
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.compiler.row_deps import KeptAside
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
plan = compile_plan(scaling_model(size // 4), [scaling_spec()])
graph = plan.graph
env, version, record = graph.meta_rows
[(table, rows, n, vals)] = record.values()
vals = list(vals)
rest = {k: v for k, v in dict.items(env)}  # what inference put in before the rows
def base():
    e = dict(rest); e.update(zip(chain.from_iterable(rows), vals * n)); return e
def mine():
    e = KeptAside(rest); e.defer(chain.from_iterable(rows[:]), partial(mul, vals, n)); return e
res = {"base": ([], []), "mine": ([], [])}
for r in range(rounds):
    for name, f in ((("base", base), ("mine", mine)) if r % 2 == 0 else (("mine", mine), ("base", base))):
        gc.collect(); gc.disable()
        t = time.perf_counter(); e = f(); m = time.perf_counter() - t
        t = time.perf_counter(); gc.collect(0); c = time.perf_counter() - t
        res[name][0].append(m); res[name][1].append(c); del e
gc.enable()
print("rows", len(rows), "ids", len(rows) * len(vals), "load", os.getloadavg())
for name, (m, c) in res.items():
    print(f"{name}: make median {statistics.median(m)*1e3:.1f} ms (min {min(m)*1e3:.1f}), gc(0) after median {statistics.median(c)*1e3:.1f} ms (min {min(c)*1e3:.1f})")
