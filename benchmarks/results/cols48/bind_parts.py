"""In-process timing of ``Holders.walk`` (the owner walk), the sources' addresses and the whole
``Holders.bind`` on one stamped 100k plan: medians of ``--reps`` process-time runs. Run it on
the base tree and on this one, alternating processes.

    PYTHONPATH=TREE python3 benchmarks/results/cols48/bind_parts.py [--reps 15]
"""

import argparse
import sys
from pathlib import Path

from derivgraph.runtime import entry
from derivgraph.runtime.holders import Holders

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan, time_pieces  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=15)
args = parser.parse_args()
plan, held, _ = held_plan(args.size)
bind = Holders.bind
h = plan.holders
sources = plan.tensors.sources
tensors = list(sources.values())
owner_paths = [p.rpartition(".")[0] for p in sources]
sweep = getattr(entry, "addresses_of", lambda ts: list(map(entry.address_of, ts)))
pieces = {
    "walk": lambda: h.walk(owner_paths),
    "source addresses": lambda: sweep(tensors),
    "holders.bind": lambda: bind(h, sources, held),
}
out = time_pieces(pieces, args.reps, width=18, label="median ")
bind(h, sources, held)
assert list(map(entry.address_of, tensors)) == sweep(tensors)
hops = h.hops
print("hops", len(hops.prefixes), "objects", len(hops.objects), "slow", len(hops.slow),
      "first", hops.prefixes[:3], "intact", hops.intact(), "moved", plan.moved())
