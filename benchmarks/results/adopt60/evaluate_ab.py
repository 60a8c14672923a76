"""In-process A/B of the compile's evaluation (``planner._evaluate_all``) at 100k, with the inputs
the compile gives it: the build's source reads and a layout book holding the build's proven
source columns. Base: the base tree's ``planner`` and ``compiler/columns.py`` loaded by path
(the base ``_evaluate_all`` calls the base ``evaluate_columns``); mine: this tree's. Each call
gets a fresh book (the source records added, untimed) and env; collector off. Both arms' envs
are checked equal (same keys, bit for bit) first.

    PYTHONPATH=. python benchmarks/results/adopt60/evaluate_ab.py \
        --base /tmp/base_adopt60 --rounds 15
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.column_layout import ColumnLayouts, proven_layout  # noqa: E402
from derivgraph.compare import bits_equal  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base_columns = base_module(args.base, "derivgraph/compiler/columns.py")
    base = base_module(args.base, "derivgraph/planner.py")
    for name in ("evaluate_columns", "derived_columns", "fill_derived"):
        setattr(base, name, getattr(base_columns, name))
    captured: dict[str, Any] = {}
    record, evaluate = planner._record_sources, planner._evaluate_all

    def spy_record(book: ColumnLayouts, graph: Any) -> None:
        captured["proven"] = list(graph.proven_sources)
        record(book, graph)

    def spy_evaluate(graph: Any, sources: Any = None, book: Any = None) -> Any:
        captured["graph"], captured["sources"] = graph, dict(sources)
        return evaluate(graph, sources, book)

    planner._record_sources, planner._evaluate_all = spy_record, spy_evaluate
    with stamping(True):
        planner._prepare(scaling_model(args.size // 4), [scaling_spec()], False, True)
    planner._record_sources, planner._evaluate_all = record, evaluate
    graph, sources, proven = captured["graph"], captured["sources"], captured["proven"]

    def book() -> ColumnLayouts:
        out = ColumnLayouts()
        for tensors, layout in proven:
            made = proven_layout(layout)
            if made is not None:
                out.add(tensors, made)
        return out

    arms = {"base": base._evaluate_all, "mine": planner._evaluate_all}
    got = {name: fn(graph, dict(sources), book()) for name, fn in arms.items()}
    assert got["base"].keys() == got["mine"].keys()
    assert all(bits_equal(got["base"][k], got["mine"][k]) for k in got["base"]
               if hasattr(got["base"][k], "dtype"))
    del got
    gc.collect()
    gc.disable()
    times: dict[str, list[float]] = {name: [] for name in arms}
    for r in range(args.rounds):
        order = list(arms.items())
        if r % 2:
            order.reverse()
        for name, fn in order:
            b, s = book(), dict(sources)
            start = time.process_time()
            fn(graph, s, b)
            times[name].append(time.process_time() - start)
    report(times)


if __name__ == "__main__":
    main()
