"""In process, interleaved A, B / B, A by round: the startup check's tensors and addresses at
100k (what ``BoundTensors.startup_addresses`` hands ``AtAddresses``, the keep mask given):
A every marked entry read (the base's two list comprehensions), B ``_startup_tensors``: the
kept columns' own ``storages``/``ptrs`` at ``EntryTable.rows``. Both asserted equal (by
identity, addresses). gc off as in the compile.
usage: PYTHONPATH=. python3 benchmarks/results/startaddr77/ab_startaddr.py [LAYERS] [ROUNDS]"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from itertools import compress

from derivgraph import compile_plan
from derivgraph.runtime.storage import _restorable, _startup_tensors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def base(entries, mask):
    kept = list(compress(entries, mask))
    return [e.storage for e in kept], [e.startup_ptr for e in kept]


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 31
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    rows = plan.entries.rows
    entries = list(plan.entries.by_id.values())
    mask = _restorable(entries, rows)
    a, b = base(entries, mask), _startup_tensors(entries, mask, rows)
    assert len(a[0]) == len(b[0]) and all(map(lambda x, y: x is y, a[0], b[0])) \
        and a[1] == b[1]
    gc.collect()
    gc.disable()
    times: dict[str, list[float]] = {"A": [], "B": []}
    wins = 0
    for r in range(rounds + 2):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        got = {}
        for tag in order:
            t = time.perf_counter()
            base(entries, mask) if tag == "A" else _startup_tensors(entries, mask, rows)
            got[tag] = time.perf_counter() - t
        if r >= 2:
            for tag in got:
                times[tag].append(got[tag])
            wins += got["B"] < got["A"]
    gc.enable()
    ta, tb = statistics.median(times["A"]), statistics.median(times["B"])
    print(f"{len(entries)} entries, {len(a[0])} kept, {rounds} rounds, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"A (every kept entry read) median {ta * 1e3:.3f} ms; B (columns' lists at rows) "
          f"median {tb * 1e3:.3f} ms; B faster {wins} of {rounds}")


if __name__ == "__main__":
    main()
