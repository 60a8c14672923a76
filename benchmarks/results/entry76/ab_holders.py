"""In process, interleaved A, B / B, A by round: the holder binding's rows of the held
columns at 100k (``holders._found_rows`` over the plan's entries and its 4 columns): A
searched by identity (``column_rows``, the base's), B taken from ``EntryTable.rows``. Both
assert the same answer. gc off as in the compile.
usage: PYTHONPATH=. python3 benchmarks/results/entry76/ab_holders.py [LAYERS] [ROUNDS]"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

from derivgraph import compile_plan
from derivgraph.runtime.holders import _found_rows
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 31
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    table = plan.entries
    entries = list(table.by_id.values())
    held = [(c.name, c.entries, c.owners, c) for c in table.columns]
    assert _found_rows(entries, held) == _found_rows(entries, held, table)
    gc.collect()
    gc.disable()
    times: dict[str, list[float]] = {"A": [], "B": []}
    wins = 0
    for r in range(rounds + 2):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        got = {}
        for tag in order:
            t = time.perf_counter()
            _found_rows(entries, held) if tag == "A" else _found_rows(entries, held, table)
            got[tag] = time.perf_counter() - t
        if r >= 2:
            for tag in got:
                times[tag].append(got[tag])
            wins += got["B"] < got["A"]
    gc.enable()
    a, b = statistics.median(times["A"]), statistics.median(times["B"])
    print(f"{len(entries)} entries, {len(held)} columns, {rounds} rounds, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"A (searched) median {a * 1e3:.2f} ms; B (EntryTable.rows) median {b * 1e3:.2f} ms; "
          f"B faster {wins} of {rounds}")


if __name__ == "__main__":
    main()
