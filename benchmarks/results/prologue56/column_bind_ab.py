"""In-process A/B of the compile's entry-column binds at 100k (stamped scaling, 4 columns of
one table): each column proven on its own (the base's rule: ``bind(owners)`` with no previous
proof) against this tree's chain (``last = column.bind(owners, last)``); the same columns and
reader, stores idempotent.

    PYTHONPATH=. python3 benchmarks/results/prologue56/column_bind_ab.py --base TREE [--rounds N]
"""

from __future__ import annotations

import gc
import sys
from typing import Any

sys.path.insert(0, "benchmarks/results")
from module_ab import ab_args, alternate, base_module, report  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.compiler.owners import PathReader  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 11)
    base = base_module(args.base, "derivgraph/runtime/entry_columns.py")
    made: list[Any] = []
    build = planner.entry_columns

    def recording(*a: Any) -> Any:
        found = build(*a)
        made.extend(found)
        return found

    planner.entry_columns = recording
    model = scaling_model(args.size // 4)
    with stamping(True):
        planner.compile_plan(model, [scaling_spec()])
    reader = PathReader(model)
    reader.owners([e.node.owner_path for e in made[0].entries])  # walked, as in the compile

    def mine() -> None:
        last = None
        for column in made:
            last = column.bind(reader, last)

    def base_arm() -> None:
        for column in made:
            base.EntryColumn.bind(column, reader)

    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {"base": base_arm, "mine": mine}))


if __name__ == "__main__":
    main()
