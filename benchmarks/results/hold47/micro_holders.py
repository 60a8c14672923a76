"""In-process A/B of hold47's first change on one stamped 100k scaling plan: the holders' bind
as the base reads it (no columns: every name's owners read through the registries) vs with
the compile's proven entry columns (``held_columns``), alternating ``--rounds`` times on the
same plan, the two tables checked equal first; and the proof's own cost. Process seconds.
Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/hold47/micro_holders.py --rounds 11
"""

import argparse
import gc
import statistics
import time

from derivgraph import planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
args = parser.parse_args()

kept = {}
_held = entry_columns.held_columns


def keep(columns, others, owners):
    kept["args"] = (columns, others)
    kept["held"] = out = _held(columns, others, owners)
    return out


planner.held_columns = keep
gc.disable()
model = scaling_model(args.size // 4)
with stamping(True):
    plan = planner.compile_plan(model, [scaling_spec()])
held = kept["held"]
print(f"plan: {len(plan.entries)} entries; held columns {len(held)} of {len(kept['args'][0])}, "
      f"rows {sum(len(c[1]) for c in held)}", flush=True)
h, sources = plan.holders, plan.tensors.sources


def table():
    t = h.table
    return [id(d) for d in t.dicts], list(t.keys), list(t.fast)


h.bind(sources)
want = table()
h.bind(sources, held)
assert table() == want, "the tables differ"
print("tables equal", flush=True)

base, mine = [], []
for _ in range(args.rounds):
    for out, cols in ((base, ()), (mine, held)):
        gc.collect()
        t0 = time.process_time()
        h.bind(sources, cols)
        out.append(time.process_time() - t0)
faster = sum(m < b for b, m in zip(base, mine))
print(f"Holders.bind: base {statistics.median(base):.4f} s, columns {statistics.median(mine):.4f}"
      f" s, delta {statistics.median(mine) - statistics.median(base):+.4f} s, faster {faster}/"
      f"{args.rounds}")
print("base ", " ".join(f"{x:.4f}" for x in base))
print("mine ", " ".join(f"{x:.4f}" for x in mine))

columns, others = kept["args"]
cost = []
for _ in range(args.rounds):
    reader = PathReader(model)
    reader.owners(sorted({e.node.owner_path for e in plan.entries.values()}))  # adoption's, warm
    t0 = time.process_time()
    _held(columns, others, reader)
    cost.append(time.process_time() - t0)
print(f"held_columns (the proof): {statistics.median(cost):.4f} s median")
