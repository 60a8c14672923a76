"""In-process A/B of row_source_deps at 100k: the base tree's (BASE, default /tmp/base76 =
b73dbb52) vs this tree's, interleaved rounds; make time, then the young collection with the
result alive. From this tree: PYTHONPATH=$PWD python3 ab_deps.py 100000 9"""
import gc, sys, time, importlib.util, statistics, os
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.compiler import row_deps as new
from derivgraph.compiler.layers import closed_layers
spec = importlib.util.spec_from_file_location(  # the base tree (b73dbb52)
    "row_deps_old", os.environ.get("BASE", "/tmp/base76") + "/derivgraph/compiler/row_deps.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
plan = compile_plan(scaling_model(size // 4), [scaling_spec()])
graph = plan.graph
nodes, tables = graph.ir.nodes, closed_layers(graph)
res = {"base": ([], []), "mine": ([], [])}
for r in range(rounds):
    for name, mod in (("base", old), ("mine", new)) if r % 2 == 0 else (("mine", new), ("base", old)):
        gc.collect(); gc.disable()
        t = time.perf_counter(); deps = mod.row_source_deps(nodes, tables); m = time.perf_counter() - t
        t = time.perf_counter(); gc.collect(0); c = time.perf_counter() - t
        res[name][0].append(m); res[name][1].append(c)
        del deps
gc.enable()
print("load", os.getloadavg())
for name, (m, c) in res.items():
    print(f"{name}: make median {statistics.median(m)*1e3:.1f} ms (min {min(m)*1e3:.1f}), gc(0) after median {statistics.median(c)*1e3:.1f} ms (min {min(c)*1e3:.1f})")
