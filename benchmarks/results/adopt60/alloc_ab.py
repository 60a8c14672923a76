"""In-process A/B of the entry columns' allocation at 100k (stamped scaling compile): the base
tree's ``EntryColumn.allocate`` (``allocate_like`` per value) against this tree's
(``allocate_column``: one ``empty_like`` sweep where the values' record proves them row-major),
on the columns and values one compile allocated, each arm with a fresh layout book holding the
values' records (as the evaluation left them in each tree), collector off. Both arms' storages
are checked equal in layout first.

    PYTHONPATH=. python benchmarks/results/adopt60/alloc_ab.py \
        --base /tmp/base_adopt60 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.adoption import allocate_column, allocate_like  # noqa: E402
from derivgraph.column_layout import ColumnLayouts  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.runtime import entry_columns  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/runtime/entry_columns.py")
    captured: list[tuple[Any, list[Any], Any]] = []
    allocate = entry_columns.EntryColumn.allocate

    def spy(self: Any, values: list[Any], fills: list[Any], alloc: Any, book: Any = None) -> None:
        record = None if book is None else book.common(values)
        captured.append((self, list(values), record))
        allocate(self, values, fills, alloc, book)

    entry_columns.EntryColumn.allocate = spy  # type: ignore[method-assign]
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    entry_columns.EntryColumn.allocate = allocate  # type: ignore[method-assign]
    cols = [(c, v, r) for c, v, r in captured if type(c) is entry_columns.EntryColumn]
    print(f"{len(cols)} columns, {sum(len(v) for _, v, _ in cols)} rows;",
          "records contiguous:", [None if r is None else r.contiguous for _, _, r in cols])

    def book_of(values: list[Any], record: Any, proven: bool) -> ColumnLayouts:
        book = ColumnLayouts()
        if record is not None:  # the base evaluation's record proves no contiguity
            book.add(values, record if proven else type(record)(
                record.type, record.dtype, record.shape, record.device))
        return book

    def run(mine: bool) -> list[list[Any]]:
        out = []
        for column, values, record in cols:
            cls = entry_columns.EntryColumn if mine else base.EntryColumn
            fresh = cls(column.template, column.name, column.ids, column.entries, column.owners)
            book = book_of(values, record, mine)
            fresh.allocate(values, [], allocate_column if mine else allocate_like, book)
            out.append(fresh.storages)
        return out

    def facts(t: Any) -> tuple[Any, ...]:
        return type(t), t.dtype, t.shape, t.stride(), t.device, t.storage_offset()

    a, b = run(False), run(True)
    assert [[facts(t) for t in s] for s in a] == [[facts(t) for t in s] for s in b]
    del a, b, plan
    gc.collect()
    gc.disable()
    times = alternate(args.rounds, {"base": lambda: run(False), "mine": lambda: run(True)})
    report(times)


if __name__ == "__main__":
    main()
