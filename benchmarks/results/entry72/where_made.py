"""Where a compile (and ``plan.prepare``, one ``plan.run()``, one ``plan.refill()``) makes the
held derived nodes (:meth:`HeldDerived.nodes`): a counter of the rows made, by the caller chain
(library frames only) of each first making, per phase; and the column rows' entries whose
``node`` was read (:class:`~derivgraph.runtime.entry.RowEntry`).
usage: PYTHONPATH=. python3 benchmarks/results/entry72/where_made.py [LAYERS]
"""

from __future__ import annotations

import sys
import traceback
from collections import Counter

from derivgraph import planner
from derivgraph.compiler.graph import HeldDerived
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

phase = ["compile_plan"]


def _frames() -> list[str]:
    """The library frames of the caller's stack, outermost first."""
    return [f"{f.filename.split('derivgraph/')[-1]}:{f.name}"
            for f in traceback.extract_stack()[:-2] if "derivgraph/" in f.filename
            and "where_made" not in f.filename]


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    made: Counter[tuple[str, str]] = Counter()
    real = HeldDerived.nodes

    def counted(self: HeldDerived) -> list:  # type: ignore[type-arg]
        if self.made is None:
            made[(phase[0], " <- ".join(reversed(_frames()[-8:])))] += len(self.ids)
        return real(self)

    HeldDerived.nodes = counted  # type: ignore[method-assign]
    try:
        plan = planner.compile_plan(scaling_model(layers), [scaling_spec()])
        phase[0] = "prepare"
        plan.prepare()
        phase[0] = "run"
        plan.run()
        phase[0] = "refill"
        plan.refill()
    finally:
        HeldDerived.nodes = real  # type: ignore[method-assign]
    print(f"{layers} layers, {len(plan.entries)} entries: {sum(made.values())} held rows made")
    for (when, where), count in made.most_common():
        print(f"{count:7d}  {when}: {where}")


if __name__ == "__main__":
    main()
