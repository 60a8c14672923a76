"""Calls of :class:`~derivgraph.runtime.entry.HeldRows`' lookups by phase and caller over a
compile of the scaling model (LAYERS, default 1000), run, refill, run, refill; and whether
the rows' id index was made.
usage: PYTHONPATH=. python3 benchmarks/results/rowentry79/held_rows_calls.py [LAYERS]
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from derivgraph import planner
from derivgraph.runtime import entry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

calls: Counter[tuple[str, str, str]] = Counter()
phase = ["compile"]


def _counted(name: str) -> Any:
    inner = getattr(entry.HeldRows, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        code = sys._getframe(1).f_code
        where = f"{code.co_filename.split('derivgraph/')[-1]}:{sys._getframe(1).f_lineno}"
        calls[(phase[0], name, where)] += 1
        return inner(*args, **kwargs)

    return call


def main() -> None:
    for name in ("_row", "__getitem__", "get", "__contains__", "storage", "__iter__", "__len__"):
        setattr(entry.HeldRows, name, _counted(name))
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    for name, step in (("run", plan.run), ("refill", plan.refill), ("run2", plan.run),
                       ("refill2", plan.refill)):
        phase[0] = name
        step()
    for key, n in sorted(calls.items()):
        print(n, *key)
    print("index built:", plan.entries.by_id._index is not None)


if __name__ == "__main__":
    main()
