"""In-process A/B of the entry columns' recorded storage addresses on one stamped 100k scaling
plan: the layer proof (``provable_layers``) and the row levels (``row_levels``) with the
compile's layout book holding the addresses recorded at startup (mine) vs the same book
without them (the per-tensor ``untyped_storage().data_ptr()`` sweeps, the base rule),
alternating ``--rounds`` times (answers checked equal first); process seconds, medians.

    PYTHONPATH=. python3 benchmarks/results/back46/micro_addresses.py --rounds 11
"""

import argparse
import gc
import statistics
import time

from derivgraph import column_layout, planner
from derivgraph.compiler import codegen, lower, lower_layers, schedule_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
args = parser.parse_args()
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
book, ctx = books[-1], plan.tensors
recorded = book._addresses
print(f"book: {len(book)} tensors, {sum(len(c) for c, _ in recorded.values())} addresses "
      f"in {len(recorded)} columns", flush=True)
ctx.layouts = book
steps = lower.lower_steps(ctx)
run_steps, _ = codegen.stage_directly(ctx, steps)


def levels_facts(out):
    return out.copy_of, out.templates, out.fenced, out.nodes, out.shared


cases = {
    "provable_layers": (lambda: lower_layers.provable_layers(ctx),
                        lambda rows: [(id(t.template[0]), len(t)) for t in rows]),
    "row_levels": (lambda: schedule_layers.row_levels(ctx, run_steps, steps.layers),
                   levels_facts),
}


def without(fn):
    def run():
        book._addresses = {}
        try:
            return fn()
        finally:
            book._addresses = recorded
    return run


for name, (fn, facts) in cases.items():
    run_base, run_mine = without(fn), fn
    assert facts(run_base()) == facts(run_mine()), name
    times = {"base": [], "mine": []}
    for _ in range(args.rounds):
        for tag, f in (("base", run_base), ("mine", run_mine)):
            start = time.process_time()
            f()
            times[tag].append(time.process_time() - start)
    b, m = statistics.median(times["base"]), statistics.median(times["mine"])
    wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
    print(f"{name:24s} base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  "
          f"mine faster {wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
          f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
