"""In-process A/B of ``entry_columns`` with the lookup of adoption's answer on one 100k
stamped compile's real objects (captured by a spy on ``planner.entry_columns`` during the
compile, in this tree): base, the base tree's ``entry_columns`` over
``dict(zip(ids, planned))`` (what its ``_compile`` hands it); mine, this tree's over
``adoption.PlannedById`` (the dict built only if a lookup needs it; the non-persistent
names' sweep once per run of columns over the same owners), alternating; the columns each
arm gives asserted the same first.

    cd TREE && PYTHONPATH=. python3 benchmarks/results/adopt64/entry_columns_ab.py \
        --base /tmp/base_adopt64
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.adoption import PlannedById  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.runtime.entry_columns import entry_columns  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 21)
    base_columns = base_module(args.base, "derivgraph/runtime/entry_columns.py")
    seen: list[Any] = []

    def spy(tables: Any, by_id: Any, owners: Any, proven: Any) -> Any:
        seen.append((list(tables), by_id, owners, list(proven)))
        return entry_columns(tables, by_id, owners, proven)

    planner.entry_columns = spy
    with stamping(True):
        planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    tables, by_id, owners, proven = seen[0]
    ids, planned, derived = by_id._ids, by_id._planned, by_id._derived
    few = [ids.index(i) for i in by_id._few]

    def base() -> Any:
        return base_columns.entry_columns(tables, dict(zip(ids, planned)), owners, proven)

    def mine() -> Any:
        return entry_columns(tables, PlannedById(ids, planned, few, derived), owners, proven)

    a, b = base(), mine()
    assert [(type(c).__name__, c.template, c.name, c.ids, c.entries, c.owners, c.values,
             c.paths, c.storages) for c in a] == \
        [(type(c).__name__, c.template, c.name, c.ids, c.entries, c.owners, c.values, c.paths,
          c.storages) for c in b]
    print(f"answers equal ({len(a)} columns, {len(ids)} ids, {len(few)} kept aside)")
    del a, b
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {"base": base, "mine": mine}))


if __name__ == "__main__":
    main()
