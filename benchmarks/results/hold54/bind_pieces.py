"""hold54: the pieces of ``Holders.bind`` re-run on one stamped plan (process CPU seconds,
medians of ``--reps``), with the compile's held columns; run once per tree, alternating.

    PYTHONPATH=TREE python benchmarks/results/hold54/bind_pieces.py [--size 100000] [--reps 7]
"""

import argparse
import operator
import sys
from itertools import repeat
from pathlib import Path

from derivgraph.runtime import accessors

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan, time_pieces  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=7)
args = parser.parse_args()
plan, held, _ = held_plan(args.size)
h = plan.holders
src_owners = [s.rpartition(".")[0] for s, *_ in h._sources]
names = [s.rpartition(".")[2] for s, *_ in h._sources]
paths = src_owners + list(map(operator.attrgetter("node.owner_path"), h.entries.values()))
objs = h.hops.objects
owners = list(map(objs.get, src_owners, repeat(None)))
sources = {p: t for p, _w, t, _ in h._sources}
pieces = {
    "HopTable": lambda: accessors.HopTable(h.model, paths),
    "holder_dicts": lambda: accessors.holder_dicts(owners, names),
    "by_name (sources)": lambda: accessors.by_name(names),
    "refresh (all)": lambda: h.refresh(held),
    "bind (all)": lambda: h.bind(sources, held),
}
time_pieces(pieces, args.reps)
