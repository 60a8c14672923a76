"""Where a compile makes the held derived nodes (node70's ``HeldDerived``): a counter.

Counts the rows made by :meth:`HeldDerived.nodes` and, per first making, the caller chain
(library frames only) that made them; one scaling compile.
usage: PYTHONPATH=. python3 benchmarks/results/adopt71/where_made.py [LAYERS]
"""

from __future__ import annotations

import sys
import traceback
from collections import Counter

from derivgraph import planner
from derivgraph.compiler.graph import DerivedGraph, HeldDerived
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _frames() -> list[str]:
    """The library frames of the caller's stack, outermost first."""
    return [f"{f.filename.split('derivgraph/')[-1]}:{f.name}"
            for f in traceback.extract_stack()[:-2] if "derivgraph/" in f.filename
            and "where_made" not in f.filename]


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    made: Counter[str] = Counter()
    real = HeldDerived.nodes

    def counted(self: HeldDerived) -> list:  # type: ignore[type-arg]
        if self.made is None:
            made[" <- ".join(reversed(_frames()[-8:]))] += len(self.ids)
        return real(self)

    inserted: list[str] = []
    real_derived = DerivedGraph.derived

    def derived(self: DerivedGraph) -> dict:  # type: ignore[type-arg]
        if self._held:  # the held runs' rows go into the dict now
            inserted.append(" <- ".join(reversed(_frames()[-8:])))
        return real_derived.fget(self)  # type: ignore[attr-defined]

    HeldDerived.nodes = counted  # type: ignore[method-assign]
    DerivedGraph.derived = property(derived)  # type: ignore[method-assign, assignment]
    try:
        planner.compile_plan(scaling_model(layers), [scaling_spec()])
    finally:
        HeldDerived.nodes = real  # type: ignore[method-assign]
        DerivedGraph.derived = real_derived  # type: ignore[method-assign]
    print(f"{layers} layers: {sum(made.values())} held rows made")
    for where, count in made.most_common():
        print(f"{count:7d}  {where}")
    print("the held rows put in graph.derived's dict (its first read while held) at:")
    for where in inserted:
        print(f"         {where}")


if __name__ == "__main__":
    main()
