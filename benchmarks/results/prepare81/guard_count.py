"""Per workload: guard builds and sweeps in the first 5 refills (deterministic)."""
import json, sys, torch
from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload
from derivgraph.runtime.engine import Layouts
swept = Layouts.swept
calls = []
def spy(self, theirs):
    calls.append(len(theirs)); return swept(self, theirs)
Layouts.swept = spy
for wl in ("deepseek", "reference"):
    model, specs, reload, post_load, _ = _workload("cpu", wl, 61, None)
    plan = compile_plan(model, specs)
    calls.clear()
    lay = plan._refill_table._layouts
    out = {"workload": wl, "guards_after_compile": lay._guards}
    per = []
    with torch.no_grad():
        for i in range(5):
            reload(i); post_load(); n = len(calls)
            r = plan.refill()
            per.append((len(calls) - n, lay._guards, r.steps))
    out["per_refill(sweeps,guards,steps)"] = per
    print(json.dumps(out))
