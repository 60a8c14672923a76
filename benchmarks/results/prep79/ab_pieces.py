"""In-process A/B of the three pieces prep79 changed, on the 100k scaling plan (interleaved
rounds, gc off, medians and minima in ms):

1. the startup tensors' check (``BoundTensors.startup_addresses``) made per kept entry (base)
   vs from the entry columns' lists (this tree); the two checks compared (tensors by identity,
   addresses);
2. the words' gather ``HolderTable.startup_ptrs()`` that ``prepare``'s refill table no longer
   makes (its check just took the words) vs taking ``table.ptrs``;
3. the refill table's usable-target sweep ``all(map(fast.__getitem__, index))`` vs
   ``HolderTable.all_fast``.

    PYTHONPATH=TREE python3 ab_pieces.py [ROUNDS]
"""

import gc
import statistics
import sys
import time
from itertools import compress

from derivgraph.addresses import AtAddresses
from derivgraph.planner import compile_plan
from derivgraph.runtime.storage import _restorable
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
plan = compile_plan(scaling_model(25000), [scaling_spec()])
tensors, held = plan.tensors, plan.holders.table
index = plan._refill_table.index


def startup_base() -> AtAddresses:
    entries = list(tensors.entries.values())
    mask = tensors._startup_mask = _restorable(
        entries, () if tensors._table is None else tensors._table.rows)
    kept = list(compress(entries, mask))
    return AtAddresses([e.storage for e in kept], [e.startup_ptr for e in kept])


def startup_mine() -> AtAddresses:
    tensors._startup = None
    return tensors.startup_addresses()


a, b = startup_base(), startup_mine()
assert all(map(lambda x, y: x is y, a.tensors, b.tensors)) and a.ptrs == b.ptrs
print(f"startup check: {len(b)} tensors, the same (identity) and the same addresses")
pairs = {
    "startup check": (startup_base, startup_mine),
    "refill addresses": (held.startup_ptrs, lambda: held.ptrs),
    "usable sweep": (lambda: all(map(held.fast.__getitem__, index)), lambda: held.all_fast),
}
gc.disable()
for label, (old, new) in pairs.items():
    times: dict[str, list[float]] = {"base": [], "prep79": []}
    for r in range(rounds):
        order = (("base", old), ("prep79", new)) if r % 2 == 0 else \
            (("prep79", new), ("base", old))
        for name, fn in order:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    print(label + ": " + "; ".join(
        f"{k} median {statistics.median(v) * 1e3:.2f} min {min(v) * 1e3:.2f} ms"
        for k, v in times.items()))
