"""In-process A/B of ``InstanceTable.column`` at 100k: the calls one stamped compile makes
(the table and the sequence of positions captured by a spy), replayed on a fresh table of each
arm per round (the base tree's ``compiler/instances.py`` loaded by path against this tree's).
Each arm's answers are checked equal first; collector off; process time.

    PYTHONPATH=. python benchmarks/results/tail61/column_ab.py --base /tmp/base_tail61 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph.compiler import instances  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.planner import compile_plan  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def _captured(size: int) -> tuple[Any, list[tuple[int, int]]]:
    """One compile's tables (by id) and its ``column`` calls as (table id, position)."""
    calls: list[tuple[int, int]] = []
    tables: dict[int, Any] = {}
    column = instances.InstanceTable.column

    def spy(self: Any, k: int) -> list[str]:
        tables[id(self)] = self
        calls.append((id(self), k))
        return column(self, k)

    instances.InstanceTable.column = spy  # type: ignore[method-assign]
    try:
        with stamping(True):
            compile_plan(scaling_model(size // 4), [scaling_spec()])
    finally:
        instances.InstanceTable.column = column  # type: ignore[method-assign]
    return tables, calls


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/compiler/instances.py").InstanceTable
    tables, calls = _captured(args.size)
    print(f"{len(calls)} column calls over {len(tables)} table(s), "
          f"{len(set(calls))} distinct (table, position)")

    def run(cls: type) -> list[list[str]]:
        fresh = {key: cls(t.template, t.rows) for key, t in tables.items()}
        return [fresh[key].column(k) for key, k in calls]

    assert run(base) == run(instances.InstanceTable)
    gc.disable()
    report(alternate(args.rounds, {"base": lambda: run(base),
                                   "mine": lambda: run(instances.InstanceTable)}))


if __name__ == "__main__":
    main()
