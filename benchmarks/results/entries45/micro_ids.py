"""In-process A/B of ``_compile``'s entry-id reads, base expressions (``Entry.id``, a property,
per use) vs this tree's (``node.id`` read once per entry by a C-level ``attrgetter``), on one
100k scaling plan's planned entries; the loop bodies' other work left out (the same on both
sides). Results checked equal first; process seconds, medians.

    PYTHONPATH=. python3 benchmarks/results/entries45/micro_ids.py --rounds 11
"""

import argparse
import gc
import statistics
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import _FIRST, _NODE_ID, _prepare
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
args = parser.parse_args()
gc.disable()
with stamping(True):
    plan, values, planned, owners = _prepare(scaling_model(args.size // 4), [scaling_spec()],
                                             False, True)
in_columns = {e.id for e, _ in planned[::2]}


def base():
    by_id = {e.id: (e, x) for e, x in planned}
    entries, rest = {}, []
    for entry, _extra in planned:
        if entry.id not in in_columns:
            rest.append(entry)
        entries[entry.id] = entry
    rebound = [e for e in entries.values() if e.id not in in_columns]
    return by_id, entries, rest, rebound


def mine():
    ids = list(map(_NODE_ID, map(_FIRST, planned)))
    by_id = dict(zip(ids, planned))
    entries, rest = {}, []
    for node_id, (entry, _extra) in zip(ids, planned):
        if node_id not in in_columns:
            rest.append(entry)
        entries[node_id] = entry
    rebound = [e for i, e in entries.items() if i not in in_columns]
    return by_id, entries, rest, rebound


assert base() == mine()
times = {"base": [], "mine": []}
for r in range(args.rounds):
    for tag, fn in ((("base", base), ("mine", mine)) if r % 2 == 0
                    else (("mine", mine), ("base", base))):
        start = time.process_time()
        fn()
        times[tag].append(time.process_time() - start)
b, m = statistics.median(times["base"]), statistics.median(times["mine"])
wins = sum(x < y for x, y in zip(times["mine"], times["base"]))
print(f"entry ids in _compile  base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f} s  mine faster "
      f"{wins}/{args.rounds}  base={[round(x, 4) for x in times['base']]} "
      f"mine={[round(x, 4) for x in times['mine']]}", flush=True)
