"""What not making the stamped columns' ``Entry`` objects could save at most, at 100k: each
kind of per-row access that ``readers.py`` counts, timed as the C-level sweep the library runs
it as (``map(Entry, ...)``, ``map(setattr, ...)``, ``map(attrgetter(...))`` over the 100k
column rows' entries of a real compile; medians of ``--rounds``), times its count (read from
``readers.txt``, made at ``--layers`` layers, scaled to the 100k compile's column rows).
An upper bound: a columnar table still pays for its own lists (its gathers in the table's
order, its materialising on access). Usage (from the tree root):

    PYTHONPATH=. python3 benchmarks/results/entry70/upper_bound.py \
        benchmarks/results/entry70/readers.txt [--rounds 11]
"""

from __future__ import annotations

import argparse
import gc
import operator
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from itertools import repeat
from typing import Any

from derivgraph import planner
from derivgraph.runtime.entry import Entry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _median_ms(fn: Callable[[], Any], rounds: int) -> float:
    out = []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
        gc.enable()
    return statistics.median(out) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("readers")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    with open(args.readers) as f:
        head = f.readline().split()
        small_rows = int(head[head.index("in") - 1].lstrip("("))
        compile_counts: dict[tuple[str, str], int] = defaultdict(int)
        for line in f:
            parts = line.split()
            if parts and parts[0].isdigit() and parts[1] == "compile":
                compile_counts[(parts[2], parts[3])] += int(parts[0])
    plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
    rows = [e for c in plan.entries.columns for e in c.entries]
    scale = len(rows) / small_rows
    nodes = [e.node for e in rows]
    slot = rows[0].slot

    def made() -> None:
        list(map(Entry, nodes, repeat(None), repeat(slot), repeat(False)))

    def written() -> None:
        list(map(setattr, rows, repeat("startup_ptr"), repeat(0)))

    per_row: dict[tuple[str, str], float] = {}
    n = len(rows)
    init_ms = _median_ms(made, args.rounds)
    set_ms = _median_ms(written, args.rounds)
    for (kind, name) in sorted(compile_counts):
        if kind == "set":
            per_row[(kind, name)] = set_ms / n
        else:
            path = "node.id" if name == "node" else name  # a node read: one more hop
            get = operator.attrgetter(path)
            per_row[(kind, name)] = _median_ms(lambda g=get: list(map(g, rows)),
                                               args.rounds) / n
    print(f"{n} column rows (x{scale:g} the counted compile's); Entry x{n}: {init_ms:.1f} ms")
    total = 0.0
    for key, count in sorted(compile_counts.items()):
        if key == ("set", "node") or key[0] == "set" and key[1] in ("adopted", "slot"):
            continue  # made by Entry.__init__: in its timing
        ms = per_row[key] * count * scale
        if key[0] == "set" and key[1] in ("storage", "startup_ptr", "startup_data"):
            init_share = count * scale - n  # the __init__ store of each is in its timing
            ms = per_row[key] * max(init_share, 0)
        total += ms
        print(f"  {key[0]} {key[1]:14} x{int(count * scale):7d}  {ms:6.1f} ms")
    print(f"accesses beyond __init__: {total:.1f} ms; with Entry.__init__: "
          f"{total + init_ms:.1f} ms (upper bound of the saving)")


if __name__ == "__main__":
    main()
