"""In-process A/B of the readers that take the entry columns' layout records, on one 100k
scaling plan (stamped): each reader with the compile's layout book (mine) vs without it (the
per-tensor sweeps, the base rule), alternating ``--rounds`` times on the same inputs (results
checked equal first); process seconds, medians. Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/entries45/micro.py --rounds 11
"""

import argparse
import gc
import statistics
import time

from derivgraph import planner
from derivgraph.compiler import codegen, lower, lower_layers, schedule_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import column_layout
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--only", default="")
args = parser.parse_args()

books = []


class Kept(column_layout.ColumnLayouts):  # the compile's book, kept for the harness
    __slots__ = ()

    def __init__(self):
        super().__init__()
        books.append(self)


planner.ColumnLayouts = Kept
made_columns = []
_entry_columns = planner.entry_columns


def keep_columns(*a, **k):
    out = _entry_columns(*a, **k)
    made_columns.extend(out)
    return out


planner.entry_columns = keep_columns
evaluated = []  # the columns evaluated as one call: their values
from derivgraph.compiler import columns as columns_module  # noqa: E402

_record = columns_module._record


def keep_record(book, values):
    evaluated.append(values)
    _record(book, values)


columns_module._record = keep_record
values_of = {}
_evaluate_all = planner._evaluate_all


def keep_values(*a, **k):
    out = _evaluate_all(*a, **k)
    values_of["v"] = out
    return out


planner._evaluate_all = keep_values
spec = scaling_spec()
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [spec])
book, values = books[-1], values_of["v"]
ctx = plan.tensors
print(f"book: {len(book)} tensors", flush=True)


def with_book(fn):
    def run():
        ctx.layouts = book
        try:
            return fn()
        finally:
            ctx.layouts = None
    return run


from derivgraph.runtime import engine  # noqa: E402

steps = lower.lower_steps(ctx)
refill_args = (plan.holders.table, plan._refill_targets(), set(plan.constant_entries),
               set(plan._opaque()))


def refill_facts(t):
    return (t.ids, t.index, t.dtypes, [tuple(s) for s in t.shapes], t.nbytes, t.spans,
            [(a, b) for a, b, _ in t.flat], t.whole, t.complete, t._layouts._guard is not None,
            t._layouts._guards)

run_steps, _ = codegen.stage_directly(ctx, steps)
cases = {
    "provable_layers": (lambda: lower_layers.provable_layers(ctx),
                        lambda rows: [(id(t.template[0]), len(t)) for t in rows]),
    "row_keys": (lambda: schedule_layers.row_keys(ctx, run_steps, steps.layers,
                                                  codegen._group_key), lambda keys: keys),
    "RefillTable": (lambda: engine.RefillTable(*refill_args, ctx.layouts), refill_facts),
    "bit check (_mismatches)": (lambda: planner._mismatches(plan, values), lambda bad: bad),
    "build_program (install)": (
        lambda: codegen.build_program(ctx, codegen.Bindings(), steps, "p"),
        lambda prog: prog.source),
}


column_values = [(c, list(map(values.__getitem__, c.ids))) for c in made_columns
                 if type(c).__name__ == "EntryColumn"]


def proof():  # what the compile pays to make the book (base: nothing)
    fresh = column_layout.ColumnLayouts()
    for vals in evaluated:  # evaluate_columns' records
        _record(fresh, vals)
    for column, vals in column_values:  # EntryColumn.allocate's part, then the template's
        layout = fresh.common(vals)
        if layout is None:
            layout = column_layout.column_layout(vals)
            fresh.add(vals, layout)
        types = set(map(type, column.storages))
        fresh.add(column.storages, column_layout.ColumnLayout(
            types.pop(), layout.dtype, layout.shape, layout.device, True))
        fresh.admit(plan.entries[column.template].storage, fresh.common(column.storages))
    return len(fresh)


if not args.only or "proof" in args.only:
    assert proof() == len(book)
    spent = []
    for _ in range(args.rounds):
        start = time.process_time()
        proof()
        spent.append(time.process_time() - start)
    print(f"{'proof (book made, once)':24s} cost {statistics.median(spent):.4f} s  "
          f"rounds={[round(x, 4) for x in spent]}", flush=True)
for name, (fn, facts) in cases.items():
    if args.only and name not in args.only.split(","):
        continue
    run_base, run_mine = fn, with_book(fn)
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
