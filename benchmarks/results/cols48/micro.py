"""In-process timing of the holder / refill / source-check pieces on one stamped 100k plan
(compiled once; each piece re-run on that plan, medians of ``--reps`` process-time runs).

    PYTHONPATH=TREE python3 benchmarks/results/cols48/micro.py [--size 100000] [--reps 5]
"""

import argparse
import sys
from pathlib import Path

from derivgraph.runtime.holders import Holders

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan, time_pieces  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=5)
args = parser.parse_args()
plan, held, seen = held_plan(args.size)
bind = Holders.bind
h = plan.holders
plan.tensors.layouts = seen["book"]  # the compile's layout book, as prepare sees it
sources = plan.tensors.sources


def refill_table():
    plan._refill_table = None
    plan._refill_table_now()


def sources_fresh():
    h._source_checks = h._source_watch = None
    assert h.sources_intact()


def prepare():
    plan._refill_table = None
    h._source_checks = h._source_watch = None
    h.table.watch = None
    plan.prepare()


pieces = {
    "holders.bind": lambda: bind(h, sources, held),
    "  walk": lambda: h.walk(),
    "  refresh": lambda: h.refresh(held),
    "RefillTable": refill_table,
    "sources_intact (fresh)": sources_fresh,
    "prepare (all)": prepare,
}
out = time_pieces(pieces, args.reps, label="median ")
# leave the plan as bound for the checks below
bind(h, sources, held)
prepare()
rep = plan.refill()
print("refill steps", rep.steps, "moved", plan.moved())
