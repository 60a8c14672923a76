"""In-process A/B on the CPU deepseek workload (derivgraph bench's): per round post_load, then
plan.refill(), both timed on the thread CPU clock; A and B alternate (refill22 helper).
usage: ab_deepseek.py VARIANTS N [JSON]"""
import sys, time, gc, statistics, random, json, importlib.util
from pathlib import Path
import torch
torch.set_num_threads(1)
from derivgraph import compile_plan
from derivgraph.tools.bench import _workload
spec = importlib.util.spec_from_file_location("variants", sys.argv[1]); V = importlib.util.module_from_spec(spec); spec.loader.exec_module(V)
N = int(sys.argv[2])
model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
plan = compile_plan(model, specs)
plan.run(); plan.capture()
res = {"A": {"post_load": [], "refill": []}, "B": {"post_load": [], "refill": []}}
for i in range(4):
    V.use("AB"[i % 2], plan); reload(i); post_load(); plan.refill()
gc.collect(); gc.freeze()
for i in range(N):
    for arm in (("A", "B") if i % 2 == 0 else ("B", "A")):
        V.use(arm, plan)
        reload(i)
        t0 = time.thread_time_ns(); post_load(); t1 = time.thread_time_ns(); plan.refill(); t2 = time.thread_time_ns()
        res[arm]["post_load"].append((t1 - t0) / 1e3); res[arm]["refill"].append((t2 - t1) / 1e3)
d = [b - a for a, b in zip(res["A"]["refill"], res["B"]["refill"])]
rng = random.Random(0)
boots = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(2000))
out = {"rounds": N, "clock": "thread CPU", "derived": len(plan.entries)}
for arm in "AB":
    pl, rf = statistics.median(res[arm]["post_load"]), statistics.median(res[arm]["refill"])
    ratios = [(p + r) / p for p, r in zip(res[arm]["post_load"], res[arm]["refill"])]
    out[arm] = {"post_load_us": pl, "refill_us": rf, "post_load_refill_over_post_load_median": statistics.median(ratios)}
out["paired_refill_B_minus_A_us"] = statistics.median(d); out["ci95"] = [boots[50], boots[1950]]
print(json.dumps(out))
if len(sys.argv) > 3:
    out["raw"] = res; Path(sys.argv[3]).write_text(json.dumps(out, indent=1) + "\n")
