"""In-process A/B of the lazy row entries (entry72), interleaved A, B / B, A by round.

A: every held column's entries made with their nodes at adoption (the base's making:
``HeldDerived.nodes()`` then one ``Entry`` per node); B: this tree (``RowEntry``: no node
made). Each round compiles a fresh scaling model per arm (``compile_plan``, warm process)
and times the compile and, inside it, ``adopt_or_allocate``; prints medians and how many
rounds B beat A, with the load average before and after.
usage: PYTHONPATH=. python3 benchmarks/results/entry72/ab_inprocess.py [LAYERS] [ROUNDS]
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from itertools import repeat
from typing import Any

from derivgraph import adoption, adoption_columns, planner
from derivgraph.compiler.graph import HeldDerived
from derivgraph.runtime.entry import Entry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

LAZY = adoption_columns._entries


def _eager(nodes: Any, storages: Any, slot: Any) -> list[Entry]:
    if type(nodes) is HeldDerived:
        nodes = nodes.nodes()
    return list(map(Entry, nodes, storages, repeat(slot), repeat(False)))


def one(layers: int, lazy: bool) -> tuple[float, float]:
    adoption_columns._entries = LAZY if lazy else _eager  # type: ignore[assignment]
    spent = [0.0]
    real = adoption.adopt_or_allocate

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t

    planner.adopt_or_allocate = timed  # type: ignore[assignment]
    model = scaling_model(layers)
    gc.collect()
    t = time.perf_counter()
    plan = planner.compile_plan(model, [scaling_spec()])
    total = time.perf_counter() - t
    planner.adopt_or_allocate = real  # type: ignore[assignment]
    made = sum(c.made is not None for c in plan.graph.held_columns())
    assert made == (0 if lazy else 4), made
    del plan, model
    return total, spent[0]


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    print(f"layers {layers} rounds {rounds} load before {os.getloadavg()}")
    one(layers, True), one(layers, False)  # warm
    res: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for r in range(rounds):
        for lazy in ((False, True) if r % 2 == 0 else (True, False)):
            res[lazy].append(one(layers, lazy))
        a, b = res[False][-1], res[True][-1]
        print(f"round {r}: A compile {a[0]*1e3:.1f} adopt {a[1]*1e3:.1f} | "
              f"B compile {b[0]*1e3:.1f} adopt {b[1]*1e3:.1f} ms")
    for i, name in ((0, "compile_plan"), (1, "adopt_or_allocate")):
        a = [x[i] for x in res[False]]
        b = [x[i] for x in res[True]]
        wins = sum(y < x for x, y in zip(a, b))
        print(f"{name}: A median {statistics.median(a)*1e3:.1f} ms, B median "
              f"{statistics.median(b)*1e3:.1f} ms, B faster {wins} of {rounds}")
    print(f"load after {os.getloadavg()}")


if __name__ == "__main__":
    main()
