"""In-process A/B of entry73's alias column storages, interleaved A, B / B, A by round.

One compile of the scaling model captures the arguments of the compile's
``entry_columns(tables, planned, owners, proven)`` call (nothing written to the model then;
``entry_columns`` writes nothing). Each round then calls it once per arm: A, the alias
column re-reading its entries' storages (``AliasColumn`` given no ``storages``, as the base
did); B, this tree (the storages ``_from_adoption`` read for its proof). Prints medians, how
many rounds B beat A, and the load average before and after.
usage: PYTHONPATH=. python3 benchmarks/results/entry73/ab_alias_storages.py [LAYERS] [ROUNDS]
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from typing import Any

from derivgraph import planner
from derivgraph.runtime import entry_columns
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

REAL = entry_columns.AliasColumn


class _Rereading(REAL):  # type: ignore[misc,valid-type]
    """A: the storages given are dropped (read again from the entries)."""

    __slots__ = ()

    def __init__(self, *args: Any) -> None:
        super().__init__(*args[:8])


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 41
    captured: list[Any] = []
    real = planner.entry_columns

    def keep(tables: Any, planned: Any, owners: Any, proven: Any = ()) -> Any:
        captured.append((tables, planned, owners, list(proven)))
        return real(tables, planned, owners, proven)

    planner.entry_columns = keep  # type: ignore[assignment]
    plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    planner.entry_columns = real  # type: ignore[assignment]
    args = captured[0]
    print(f"layers {layers} rounds {rounds} load before {os.getloadavg()}")
    gc.disable()
    times: dict[bool, list[float]] = {False: [], True: []}
    for r in range(rounds + 2):
        for b in ((False, True) if r % 2 == 0 else (True, False)):
            entry_columns.AliasColumn = REAL if b else _Rereading  # type: ignore[misc]
            t = time.perf_counter()
            got = entry_columns.entry_columns(*args)
            spent = time.perf_counter() - t
            assert sum(type(c) is (REAL if b else _Rereading) for c in got) == 1
            if r >= 2:  # two warm-up rounds
                times[b].append(spent)
    entry_columns.AliasColumn = REAL  # type: ignore[misc]
    a, b = times[False], times[True]
    wins = sum(y < x for x, y in zip(a, b))
    print(f"entry_columns: A median {statistics.median(a)*1e3:.2f} ms, B median "
          f"{statistics.median(b)*1e3:.2f} ms, B faster {wins} of {rounds}")
    print(f"load after {os.getloadavg()}")
    del plan


if __name__ == "__main__":
    main()
