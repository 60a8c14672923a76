"""hold52: the pieces of ``Holders.bind``/``refresh`` re-run on one stamped plan (process CPU
seconds, medians of ``--reps``), with the compile's held columns; run once per tree,
alternating. Also checks that ``holders_of`` with the columns equals it without (the
per-name reference) before timing.

    PYTHONPATH=TREE python benchmarks/results/hold52/bind_pieces.py [--size 100000] [--reps 7]
"""

import argparse
import gc
import operator
import statistics
import time
from itertools import compress, repeat

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import accessors
from derivgraph.runtime.holders import Holders
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=7)
args = parser.parse_args()
seen = {}
bind = Holders.bind


def spy_bind(self, sources, columns=()):
    seen["columns"] = columns = list(columns)
    return bind(self, sources, columns)


Holders.bind = spy_bind
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [spec])
h, held = plan.holders, seen["columns"]
objs = h.hops.objects
entries = list(h.entries.values())
kinds = operator.attrgetter("node.kind")
holding = list(compress(entries, map(operator.not_, map(operator.is_, map(kinds, entries),
                                                        repeat(TensorKind.SCALAR)))))
ref = accessors.holders_of(objs, h.model, holding)
got = accessors.holders_of(objs, h.model, holding, held)
assert [id(d) for d in got[0]] == [id(d) for d in ref[0]] and got[1:] == ref[1:]
print("holders_of with columns == without: True;", len(held), "columns")
located = accessors.holders_of(objs, h.model, holding, held)
pieces = {
    "walk (HopTable)": lambda: h.walk([s.rpartition(".")[0] for s, *_ in h._sources]),
    "holders_of (columns)": lambda: accessors.holders_of(objs, h.model, holding, held),
    "HolderTable": lambda: accessors.HolderTable(holding, h._where, located),
    "refresh (all)": lambda: h.refresh(held),
}
out = {k: [] for k in pieces}
for _ in range(args.reps):
    for name, fn in pieces.items():
        start = time.process_time()
        fn()
        out[name].append(time.process_time() - start)
for name, xs in out.items():
    print(f"{name:24s} {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
