"""In-process A/B of the compact pass's emission (``codegen.build_program`` over a compiled
plan's compact lowering, the compile's layout book set, as ``Plan.install`` runs it at the
compile) at 100k derived tensors (the scaling workload): the base tree's
``derivgraph/compiler/codegen.py`` and ``ColumnLayouts.common`` against this tree's, process
time, alternating, the collector off (each arm's printed pass checked equal first).

    PYTHONPATH=. python3 benchmarks/results/tail58/install_ab.py --base BASE_TREE [--rounds N]
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import column_layout  # noqa: E402
from derivgraph import planner as planner_module  # noqa: E402
from derivgraph.compiler import codegen  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/compiler/codegen.py")
    base_layout = base_module(args.base, "derivgraph/column_layout.py")
    books: list[Any] = []

    class Kept(column_layout.ColumnLayouts):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            books.append(self)

    planner_module.ColumnLayouts = Kept  # type: ignore[misc]
    with stamping(True):
        plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    book, steps, ctx = books[0], plan.programs.lowered, plan.tensors
    mine_common = column_layout.ColumnLayouts.common

    def build(module: Any, common: Any) -> str:
        column_layout.ColumnLayouts.common = common  # type: ignore[method-assign]
        ctx.layouts = book
        try:
            return module.build_program(ctx, codegen.Bindings(), steps, "p").source
        finally:
            ctx.layouts = None
            column_layout.ColumnLayouts.common = mine_common  # type: ignore[method-assign]

    assert build(base, base_layout.ColumnLayouts.common) == build(codegen, mine_common)
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {
        "base": lambda: build(base, base_layout.ColumnLayouts.common),
        "mine": lambda: build(codegen, mine_common)}))


if __name__ == "__main__":
    main()
