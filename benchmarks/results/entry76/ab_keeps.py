"""In process, interleaved A, B / B, A by round: the startup check's keep mask at 100k
(``storage._restorable`` over the plan's entries, as ``BoundTensors.startup_addresses``
makes it): A every entry read (no rows, the base's), B the columns' rows answered by their
record (``EntryTable.rows``). Both assert the same mask. gc off as in the compile.
usage: PYTHONPATH=. python3 benchmarks/results/entry76/ab_keeps.py [LAYERS] [ROUNDS]"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

from derivgraph import compile_plan
from derivgraph.runtime.storage import _restorable
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 31
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    rows = plan.entries.rows
    entries = list(plan.entries.by_id.values())
    assert _restorable(entries) == _restorable(entries, rows)
    gc.collect()
    gc.disable()
    times: dict[str, list[float]] = {"A": [], "B": []}
    wins = 0
    for r in range(rounds + 2):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        got = {}
        for tag in order:
            t = time.perf_counter()
            _restorable(entries) if tag == "A" else _restorable(entries, rows)
            got[tag] = time.perf_counter() - t
        if r >= 2:
            for tag in got:
                times[tag].append(got[tag])
            wins += got["B"] < got["A"]
    gc.enable()
    a, b = statistics.median(times["A"]), statistics.median(times["B"])
    print(f"{len(entries)} entries, {rounds} rounds, load {os.getloadavg()[0]:.2f}")
    print(f"A (every entry read) median {a * 1e3:.2f} ms; B (rows by column record) median "
          f"{b * 1e3:.2f} ms; B faster {wins} of {rounds}")


if __name__ == "__main__":
    main()
