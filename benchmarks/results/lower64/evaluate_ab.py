"""In-process A/B of ``columns.evaluate_columns`` (the compile's column evaluation) on the
graph, source reads and layout book of one 100k stamped scaling compile: the base tree's
``columns.py`` against this tree's, each call on a fresh ``CompileValues`` env (the compile's
book keeps the source columns' records; each call records its own results in it). The env
each arm makes is asserted to hold the same keys and bit-equal values first. Arms alternate,
the order reversed every other round; collector off.

    PYTHONPATH=. python3 benchmarks/results/lower64/evaluate_ab.py \
        --base /tmp/base_lower64 --rounds 11
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # module_ab

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compare import bits_equal  # noqa: E402
from derivgraph.compiler import columns  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base = base_module(args.base, "derivgraph/compiler/columns.py")
    seen: dict[str, Any] = {}
    real = planner._evaluate_all

    def spy(graph: Any, sources: Any = None, book: Any = None) -> Any:
        seen.update(graph=graph, sources=sources, book=book)
        return real(graph, sources, book)

    planner._evaluate_all = spy
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    planner._evaluate_all = real
    graph, sources, book = seen["graph"], seen["sources"], seen["book"]

    def run(module: Any) -> dict[str, Any]:
        interp = planner.CompileValues(graph, sources)
        with torch.no_grad():
            module.evaluate_columns(graph, interp.env, interp.source_at, book, {},
                                    interp.sources)
        return interp.env

    want, got = run(base), run(columns)
    assert want.keys() == got.keys() and all(bits_equal(want[k], got[k]) for k in want)
    del want, got
    gc.collect()
    gc.disable()
    try:
        print("evaluate_columns (a fresh env each call, the compile's book):")  # noqa: T201
        report(alternate(args.rounds, {"base": lambda: run(base), "mine": lambda: run(columns)}))
    finally:
        gc.enable()
    del plan


if __name__ == "__main__":
    main()
