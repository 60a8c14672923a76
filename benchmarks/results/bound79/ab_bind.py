"""One process: bind (match_specs, check_bindings), build_graph, and the warm compile with the
collector's debt (young objects after it, the first young collection's time), medians of N."""
import gc, json, os, sys, time, statistics
from derivgraph.planner import compile_plan
from derivgraph.compiler.bind import match_specs, check_bindings
from derivgraph.compiler.build import build_graph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
n = int(sys.argv[1]); tag = sys.argv[2]
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
model = scaling_model(25000)
out = {"tag": tag, "match_specs": [], "check_bindings": [], "build_graph": [], "compile": [], "gc0": [], "young": []}
for r in range(n):
    gc.collect(); gc.disable()
    t = time.process_time(); bound = match_specs(model, [spec]); out["match_specs"].append(time.process_time() - t)
    t = time.process_time(); check_bindings(bound); out["check_bindings"].append(time.process_time() - t)
    t = time.process_time(); g = build_graph(model, bound); out["build_graph"].append(time.process_time() - t)
    del g, bound
    gc.enable(); gc.collect(); gc.disable()
    m = scaling_model(25000); gc.collect(); gc.disable()
    t = time.process_time(); plan = compile_plan(m, [spec]); out["compile"].append(time.process_time() - t)
    out["young"].append(len(gc.get_objects(0)))
    t = time.process_time(); gc.collect(0); out["gc0"].append(time.process_time() - t)
    gc.enable(); del plan, m; gc.collect()
res = {k: (statistics.median(v) if isinstance(v, list) else v) for k, v in out.items()}
res["load"] = os.getloadavg()[0]
print(json.dumps(res))
