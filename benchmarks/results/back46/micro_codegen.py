"""In-process A/B of the codegen keys on one stamped 100k scaling plan: ``build_program`` (the
install) of the base tree's ``codegen`` module (loaded from ``--base``) vs this tree's, on the
same lowered steps, alternating ``--rounds`` times (program sources checked equal first);
process seconds, medians.

    PYTHONPATH=. python3 benchmarks/results/back46/micro_codegen.py --base /tmp/base_back46 \\
        --rounds 11
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

from derivgraph import column_layout, planner
from derivgraph.compiler import codegen, lower
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--base", default="/tmp/base_back46")
args = parser.parse_args()
spec = importlib.util.spec_from_file_location("base_codegen",
                                              f"{args.base}/derivgraph/compiler/codegen.py")
base_codegen = importlib.util.module_from_spec(spec)
sys.modules["base_codegen"] = base_codegen
spec.loader.exec_module(base_codegen)
books = []


class Kept(column_layout.ColumnLayouts):  # the compile's book, kept for the harness
    __slots__ = ()

    def __init__(self):
        super().__init__()
        books.append(self)


planner.ColumnLayouts = Kept
gc.disable()
with stamping(True):
    plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
ctx = plan.tensors
ctx.layouts = books[-1]
steps = lower.lower_steps(ctx)


def run(module):
    return lambda: module.build_program(ctx, module.Bindings(), steps, "p")


run_base, run_mine = run(base_codegen), run(codegen)
assert run_base().source == run_mine().source
times = {"base": [], "mine": []}
for _ in range(args.rounds):
    for tag, f in (("base", run_base), ("mine", run_mine)):
        start = time.process_time()
        f()
        times[tag].append(time.process_time() - start)
b, m = statistics.median(times["base"]), statistics.median(times["mine"])
wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
print(f"{'build_program (install)':24s} base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  "
      f"mine faster {wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
      f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
