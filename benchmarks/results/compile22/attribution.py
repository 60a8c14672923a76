#!/usr/bin/env python3
"""In one process: the cost of closed_layers with the alignment proof against without it, and
of the whole lowering (lower_steps) — on one compiled plan at 100k, alternating, medians."""
import time, gc, statistics, sys
import derivgraph.compiler.layers as layers
from derivgraph.compiler.lower import lower_steps
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
gc.disable()
plan = compile_plan(scaling_model(25000), [scaling_spec()])
g = plan.graph
real = layers.aligned_rows
res = {"closed (proof)": [], "closed (no proof)": [], "aligned_rows": [], "lower_steps": []}
for r in range(5):
    for key, fn in (("closed (proof)", real), ("closed (no proof)", lambda n, t: [True] * len(t))):
        layers.aligned_rows = fn
        g.layer_cache = (-1, None)
        t = time.process_time(); layers.closed_layers(g); res[key].append(time.process_time() - t)
    layers.aligned_rows = real
    t = time.process_time(); real(g.nodes, g.stamps[0]); res["aligned_rows"].append(time.process_time() - t)
    t = time.process_time(); lower_steps(plan.tensors); res["lower_steps"].append(time.process_time() - t)
out = {k: round(statistics.median(v), 4) for k, v in res.items()}
print(out)
if len(sys.argv) > 1:
    import json
    json.dump({"size": 100000, "runs": 5, "median_cpu_s": out}, open(sys.argv[1], "w"), indent=1)
