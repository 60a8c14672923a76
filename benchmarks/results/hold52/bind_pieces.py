"""hold52: the pieces of ``Holders.bind``/``refresh`` re-run on one stamped plan (process CPU
seconds, medians of ``--reps``), with the compile's held columns; run once per tree,
alternating. Also checks that ``holders_of`` with the columns equals it without (the
per-name reference) before timing.

    PYTHONPATH=TREE python benchmarks/results/hold52/bind_pieces.py [--size 100000] [--reps 7]
"""

import argparse
import operator
import sys
from itertools import compress, repeat
from pathlib import Path

from derivgraph.runtime import accessors
from derivgraph.spec.kinds import TensorKind

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan, time_pieces  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=7)
args = parser.parse_args()
plan, held, _ = held_plan(args.size)
h = plan.holders
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
time_pieces(pieces, args.reps)
