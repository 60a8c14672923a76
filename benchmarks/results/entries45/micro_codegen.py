"""In-process A/B of ``codegen.build_program`` (the install), base module (loaded by path; its
imports from this tree) vs this tree's, alternating, on one 100k scaling plan's steps, with no
layout book on either side (so the difference was ``Emitter.list_members``' C-level prefilter,
tried after ``fe71cfc``: a tie, not committed; run against a tree with that change). Results (the
program source) checked equal first; process seconds, medians.

    PYTHONPATH=. python3 benchmarks/results/entries45/micro_codegen.py --base /tmp/base_entries45
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

from derivgraph.compiler import codegen, lower
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
args = parser.parse_args()
found = importlib.util.spec_from_file_location("base_codegen",
                                               f"{args.base}/derivgraph/compiler/codegen.py")
base = sys.modules[found.name] = importlib.util.module_from_spec(found)
found.loader.exec_module(base)

gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
ctx = plan.tensors
assert ctx.layouts is None
steps = lower.lower_steps(ctx)
runs = {"base": lambda: base.build_program(ctx, base.Bindings(), steps, "p"),
        "mine": lambda: codegen.build_program(ctx, codegen.Bindings(), steps, "p")}
assert runs["base"]().source == runs["mine"]().source
times = {"base": [], "mine": []}
for r in range(args.rounds):
    for tag in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
        start = time.process_time()
        runs[tag]()
        times[tag].append(time.process_time() - start)
b, m = statistics.median(times["base"]), statistics.median(times["mine"])
wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
print(f"build_program (no book)  base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  mine faster "
      f"{wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
      f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
