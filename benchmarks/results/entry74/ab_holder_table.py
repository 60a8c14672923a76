"""In-process A/B of the holder table's column reads (entry74), interleaved A, B / B, A by round.

The compile's own ``HolderTable`` arguments at LAYERS layers are captured once (the entries,
holder reader, located holders, and what ``column_spans`` answered from the held columns and
their found rows). A: the table built reading every entry's id and storage (no spans, as the
base); B: ``column_spans`` then the table taking the columns' ids and storages at their rows
(this tree); the same for the holders' bind's entry owner paths (A: every entry's read;
B: the columns' paths at their rows). gc off, as in the compile; 2 warm-up rounds; prints
medians and how many rounds B beat A, with the load average before and after.
usage: PYTHONPATH=. python3 benchmarks/results/entry74/ab_holder_table.py [LAYERS] [ROUNDS]
"""

from __future__ import annotations

import gc
import operator
import os
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.runtime import accessors, holders
from derivgraph.runtime.accessors import column_read
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def capture(layers: int) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    real_table, real_spans = holders.HolderTable, holders.column_spans

    def spans(columns: Any, found: Any, entries: Any) -> Any:
        kept["spans_args"] = (list(columns), list(found), entries)
        return real_spans(columns, found, entries)

    def table(*args: Any) -> Any:
        if len(args) == 4 and args[3]:
            kept["table_args"] = args
        return real_table(*args)

    holders.HolderTable, holders.column_spans = table, spans  # type: ignore[assignment,misc]
    try:
        kept["plan"] = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    finally:
        holders.HolderTable, holders.column_spans = real_table, real_spans
    return kept


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 31
    kept = capture(layers)
    entries, where, located, _ = kept["table_args"]
    columns, found, held = kept["spans_args"]

    def a() -> float:
        t = time.perf_counter()
        accessors.HolderTable(entries, where, located)
        return time.perf_counter() - t

    def b() -> float:
        t = time.perf_counter()
        accessors.HolderTable(entries, where, located, accessors.column_spans(columns, found, held))
        return time.perf_counter() - t

    everything = list(kept["plan"].holders.entries.values())
    owner_path = operator.attrgetter("owner_path")

    def pa() -> float:  # the walk's entry owner paths: every entry's read (the base)
        t = time.perf_counter()
        list(map(owner_path, everything))
        return time.perf_counter() - t

    def pb() -> float:  # this tree: the columns' paths at their rows, the rest read
        t = time.perf_counter()
        column_read(everything, owner_path, [
            (rows, c.paths) for rows, c in accessors.column_spans(columns, found, everything)
            if c.paths is not None and len(c.paths) == len(c.ids)])
        return time.perf_counter() - t

    ta, tb = accessors.HolderTable(entries, where, located), \
        accessors.HolderTable(entries, where, located, accessors.column_spans(columns, found, held))
    assert ta.id_list == tb.id_list and all(map(lambda x, y: x is y, ta.storages, tb.storages))
    print(f"{layers} layers, {len(entries)} holders, load before {os.getloadavg()}")
    gc.disable()
    for _ in range(2):
        a(), b()
    ra, rb = [], []
    for i in range(rounds):
        if i % 2:
            y = b()
            x = a()
        else:
            x = a()
            y = b()
        ra.append(x)
        rb.append(y)
    qa, qb = [], []
    for i in range(rounds):
        if i % 2:
            y = pb()
            x = pa()
        else:
            x = pa()
            y = pb()
        qa.append(x)
        qb.append(y)
    gc.enable()
    wins = sum(y < x for x, y in zip(qa, qb))
    print(f"bind's entry owner paths A (read every entry) median "
          f"{statistics.median(qa) * 1e3:.2f} ms, B (columns' paths) median "
          f"{statistics.median(qb) * 1e3:.2f} ms, B faster {wins} of {rounds}")
    wins = sum(y < x for x, y in zip(ra, rb))
    print(f"HolderTable A (read every entry) median {statistics.median(ra) * 1e3:.2f} ms, "
          f"B (columns' ids/storages) median {statistics.median(rb) * 1e3:.2f} ms, "
          f"B faster {wins} of {rounds}")
    print(f"load after {os.getloadavg()}")


if __name__ == "__main__":
    main()
