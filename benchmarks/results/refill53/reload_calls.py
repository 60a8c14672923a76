import torch
from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import engine
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
model = scaling_model(250)
with stamping(True):
    plan = planner.compile_plan(model, [scaling_spec()])
n = [0]
real = engine._by_key
engine._by_key = lambda *a: n.__setitem__(0, n[0] + 1) or real(*a)
with torch.no_grad():
    for _ in range(3):
        for layer in model.layers:
            d = layer.__dict__
            d["inv"], d["prod"], d["strides"] = d["inv"].clone(), d["prod"].clone(), d["strides"].clone()
        plan.refill()
    print("by_key calls in 3 refills:", n[0])
    n[0] = 0
    for _ in range(3):
        model.layers[7].__dict__["inv"] = model.layers[7].__dict__["inv"].clone()
        plan.moved(); plan.rebind()
    print("by_key calls in 3 moved+rebind:", n[0])
