"""Step 1 of cols48: the real (process-time) cost of each piece of ``Holders.bind`` /
``refresh``, ``sources_intact``, ``prepare`` and ``RefillTable`` (built with the compile's layout
book, captured at ``Plan.prepare``) on one stamped 100k plan, each piece re-run on that plan
(medians of ``--reps``). line_profiler (``lprof.py``) inflates the Python loops ~2-3x; these are
the pieces' own times.

    PYTHONPATH=TREE python3 benchmarks/results/cols48/pieces.py [--reps 5]
"""

import argparse
import operator
import sys
from itertools import compress, repeat
from pathlib import Path

from derivgraph.addresses import AtAddresses
from derivgraph.compiler import flat
from derivgraph.compiler.owners import path_prefixes
from derivgraph.paths import MISSING
from derivgraph.runtime import accessors, engine, flat_copy
from derivgraph.runtime.entry import address_of
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.watch import watch_items
from derivgraph.spec.kinds import TensorKind

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan, time_pieces  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=5)
parser.add_argument("--plain", action="store_true", help="stamping off (the plain path)")
args = parser.parse_args()
plan, held, seen = held_plan(args.size, stamped=not args.plain)
bind = Holders.bind
h, book = plan.holders, seen["book"]
sources = plan.tensors.sources
paths, tensors = list(sources), list(sources.values())
split = list(map(str.rpartition, paths, repeat(".")))
owner_paths = [p for p, _, _ in split]
objs = h.hops.objects
owners = list(map(objs.get, owner_paths, repeat(MISSING)))
entries = list(h.entries.values())
kinds = operator.attrgetter("node.kind")
scalar = list(map(operator.is_, map(kinds, entries), repeat(TensorKind.SCALAR)))
holding = list(compress(entries, map(operator.not_, scalar)))
located = accessors.holders_of(objs, h.model, holding, held)
rows = h._sources
refill_args = (h.table, plan._refill_targets(), set(plan.constant_entries),
               set(plan._opaque()), book)
table = engine.RefillTable(*refill_args)
records = None if book is None else book.of(table.storages)
if records is not None and None in records:
    records = None  # the book does not hold every target: RefillTable reads each storage
runs = [(a, b) for a, b in table.spans if b > a]  # one shape per span in this workload
known = records[0] if records else None
step = flat.MAX_ELEMENTS // table.storages[0].numel()
chunks = [(x, min(x + step, b)) for a, b in runs for x in range(a, b, step)]
print("stamping", not args.plain, "book holds every target", records is not None)


def sources_fresh():
    h._source_checks = h._source_watch = None
    h.sources_intact()


def table_changed():
    h.table.watch = None
    h.table.changed()


def guard():
    table._layouts._guards = 0
    table._layouts.guard(table.storages)


pieces = {
    "bind: source paths split": lambda: list(map(str.rpartition, paths, repeat("."))),
    "bind: address_of sources": lambda: list(map(address_of, tensors)),
    "bind: walk (HopTable)": lambda: h.walk(owner_paths),
    "bind: holder_dicts": lambda: accessors.holder_dicts(owners, [p for _, _, p in split]),
    "bind: path_prefixes": lambda: path_prefixes(owner_paths),
    "refresh: kind sweep": lambda: list(map(operator.is_, map(kinds, entries),
                                            repeat(TensorKind.SCALAR))),
    "refresh: holders_of": lambda: accessors.holders_of(objs, h.model, holding, held),
    "refresh: HolderTable": lambda: accessors.HolderTable(holding, h._where, located),
    "sources_intact (fresh)": sources_fresh,
    "  AtAddresses build": lambda: AtAddresses(tensors, list(map(address_of, tensors))),
    "  watch_items sources": lambda: watch_items([w[0] for _s, w, _t, _p in rows],
                                                 accessors.NO_DICT),
    "prepare: table.changed (fresh)": table_changed,
    "  watch_items holders": lambda: watch_items(h.table.dicts, accessors.NO_DICT),
    "prepare: _refill_targets": plan._refill_targets,
    "RefillTable (with the book)": lambda: engine.RefillTable(*refill_args),
    "  flat_runs": lambda: flat_copy.flat_runs(table.storages, runs, records),
    "  FlatCopy of every chunk": lambda: [flat_copy.FlatCopy(table.storages[a:b],
                                          flat.span_of(table.storages[a:b])) for a, b in chunks],
    "  layout guard (TensorGuards)": guard,
    "  Layouts()": lambda: engine.Layouts(table.dtypes, table.shapes, table._numels),
}
time_pieces(pieces, args.reps, width=32)
