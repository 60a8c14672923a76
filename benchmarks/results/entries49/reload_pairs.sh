#!/bin/bash
# The per-reload paths on one stamped 100k scaling plan, two trees alternating, one process
# each (compile once, then each path timed --reps times; the median of each, process CPU s):
# Plan.run() (full), refill() after the engine rebuilt every holder, run(updated=[one layer]),
# run(verify=True), and moved() then rebind() with one holder rebuilt (the slow path of moved).
# usage: bash reload_pairs.sh BASE_TREE THIS_TREE PAIRS > reload_pairs.txt
base=$1; mine=$2; n=${3:-3}
code='
import gc, statistics, time, torch
from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
model = scaling_model(25000)
with stamping(True):
    plan = planner.compile_plan(model, [scaling_spec()])
gc.disable()
layers = model.layers
def rebuild():  # the engine post-load step: a fresh tensor at every holder
    for layer in layers:
        d = layer.__dict__
        d["inv"], d["prod"], d["strides"] = d["inv"].clone(), d["prod"].clone(), d["strides"].clone()
def moved_one():
    layers[7].__dict__["inv"] = layers[7].__dict__["inv"].clone()
    out = plan.moved()
    plan.rebind()
    return out
paths = {"run": lambda: plan.run(), "run(updated=)": lambda: plan.run(updated=["layers.5.scale"]),
         "run(verify=True)": lambda: plan.run(verify=True), "refill": None, "moved+rebind (one rebuilt)": moved_one}
out = {}
with torch.no_grad():
    for name, fn in paths.items():
        ts = []
        for _ in range(REPS):
            if name == "refill":
                rebuild()
                s = time.process_time(); plan.refill(); ts.append(time.process_time() - s)
            else:
                s = time.process_time(); fn(); ts.append(time.process_time() - s)
        out[name] = round(statistics.median(ts), 5)
print(" ".join(f"{k}={v}" for k, v in out.items()))
'
for _ in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    echo "$t $(cd /tmp && PYTHONPATH="$tree" python3 -c "${code//REPS/9}")"
  done
done
