"""In-process A/B of hold47's third change on one stamped 100k scaling compile: ``entry_columns``
as the base reads it (no adoption records: every fact swept again) vs with the columns
adoption took whole (``ProvenColumn``), alternating ``--rounds`` times inside the compile, at
the moment it calls ``entry_columns`` (it writes nothing; a wrapper runs the rounds, then
returns the call's own answer), the two answers checked equal first. Process seconds. Run
from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/hold47/micro_entry_columns.py --rounds 11
"""

import argparse
import gc
import statistics
import time

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import entry_columns
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
args = parser.parse_args()
real = entry_columns.entry_columns


def facts(columns):
    return [(type(c).__name__, c.template, c.name, list(c.ids), [id(e) for e in c.entries],
             [id(o) for o in c.owners], [id(s) for s in c.storages]) for c in columns]


def ab(tables, planned, owners, proven=()):
    proven = list(proven)
    a, b = real(tables, planned, owners), real(tables, planned, owners, proven)
    assert facts(a) == facts(b), "the columns differ"
    print(f"{len(planned)} planned; {len(proven)} adoption columns; {len(a)} entry columns, "
          "equal", flush=True)
    base, mine = [], []
    for _ in range(args.rounds):
        for out, given in ((base, ()), (mine, proven)):
            gc.collect()
            t0 = time.process_time()
            real(tables, planned, owners, given)
            out.append(time.process_time() - t0)
    faster = sum(m < b for b, m in zip(base, mine))
    print(f"entry_columns: base {statistics.median(base):.4f} s, with adoption's columns "
          f"{statistics.median(mine):.4f} s, delta "
          f"{statistics.median(mine) - statistics.median(base):+.4f} s, faster {faster}/"
          f"{args.rounds}")
    print("base ", " ".join(f"{x:.4f}" for x in base))
    print("mine ", " ".join(f"{x:.4f}" for x in mine))
    return b


planner.entry_columns = ab
gc.disable()
with stamping(True):
    planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
