"""Every read of a held column row's ``entry.node`` (:class:`~derivgraph.runtime.entry.RowEntry`),
by calling line, over one compile of the scaling model, ``plan.prepare``, ``plan.run()``,
``plan.refill()`` and a second run: the node is answered without being kept, so every read
comes here (not only the first). An empty table: no reader.
usage: PYTHONPATH=. python3 benchmarks/results/entry72/node_readers.py [LAYERS]
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from derivgraph import planner
from derivgraph.runtime.entry import RowEntry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

counts: Counter[tuple[str, str, int, str]] = Counter()
phase = ["compile_plan"]


def _counted(self: RowEntry, name: str) -> Any:
    if name != "node":
        raise AttributeError(name)
    frame = sys._getframe(1)
    code = frame.f_code
    counts[(phase[0], code.co_filename.split("derivgraph/")[-1], frame.f_lineno,
            code.co_name)] += 1
    return self.column.nodes()[self.row]


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    RowEntry.__getattr__ = _counted  # type: ignore[method-assign]
    plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
    rows = sum(type(e) is RowEntry for e in plan.entries.values())
    for name, step in (("prepare", plan.prepare), ("run", plan.run), ("refill", plan.refill),
                       ("run2", plan.run)):
        phase[0] = name
        step()
    print(f"{layers} layers, {len(plan.entries)} entries, {rows} row entries; "
          f"{sum(counts.values())} node reads")
    for key, n in sorted(counts.items()):
        print(n, *key)


if __name__ == "__main__":
    main()
