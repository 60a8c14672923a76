"""In-process A/B of ``CompileValues.run`` on one stamped 100k scaling graph, after the columns
were evaluated (the env as ``_evaluate_all`` hands it over): the base tree's planner (loaded
from ``--base``) vs this tree's, alternating ``--rounds`` times on copies of the same env
(results checked identical first); process seconds, medians.

    PYTHONPATH=. python3 benchmarks/results/back46/micro_values.py --base /tmp/base_back46 \\
        --rounds 11
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

import torch

from derivgraph import planner
from derivgraph.compiler.columns import evaluate_columns
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--base", default="/tmp/base_back46")
args = parser.parse_args()
spec = importlib.util.spec_from_file_location("base_planner",
                                              f"{args.base}/derivgraph/planner.py")
base_planner = importlib.util.module_from_spec(spec)
sys.modules["base_planner"] = base_planner
spec.loader.exec_module(base_planner)
gc.disable()
with stamping(True):
    plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
graph = plan.graph
order = graph.ordered()
start = planner.CompileValues(graph, dict(plan.tensors.sources))
with torch.no_grad():
    evaluate_columns(graph, start.env, start.source_at, None)
filled = dict(start.env)
print(f"order: {len(order)} nodes, {len(filled)} with a value before the sweep", flush=True)


def sweep(module):
    def run():
        interp = module.CompileValues(graph, dict(plan.tensors.sources))
        interp.env.clear()
        interp.env.update(filled)
        begin = time.process_time()
        with torch.no_grad():
            env = interp.run(order)
        return time.process_time() - begin, env
    return run


run_base, run_mine = sweep(base_planner), sweep(planner)
_, a = run_base()
_, b = run_mine()
assert list(a) == list(b) and all(x is y or isinstance(x, torch.Tensor) and torch.equal(x, y)
                                  for x, y in zip(a.values(), b.values()))
times = {"base": [], "mine": []}
for _ in range(args.rounds):
    for tag, f in (("base", run_base), ("mine", run_mine)):
        times[tag].append(f()[0])
bm, mm = statistics.median(times["base"]), statistics.median(times["mine"])
wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
print(f"{'CompileValues.run':24s} base {bm:.4f}  mine {mm:.4f}  delta {mm - bm:+.4f} s  "
      f"mine faster {wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
      f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
