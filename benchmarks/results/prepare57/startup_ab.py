"""In-process A/B of the entry columns' startup record at 100k derived tensors (the scaling
workload): the base tree's ``EntryColumn.record_startup`` (a detached alias per row) against
this tree's (with the compile's layout book: the row's ``untyped_storage()`` and the record, the
alias made where first read), over one compiled plan's columns, with the book the compile had;
process time, alternating (order reversed every other round), the collector on as in the
compile; between arms, untimed, every row's alias dropped (as the compile finds it) and a
collection. Both write every row's two fields.

    PYTHONPATH=. python3 benchmarks/results/prepare57/startup_ab.py --base BASE_TREE
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from module_ab import ab_args, base_module  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/runtime/entry_columns.py")
    books: list[Any] = []
    record = planner._record_startup

    def keeping(plan: Any, *rest: Any) -> Any:
        books.append(plan.tensors.layouts)
        return record(plan, *rest)

    planner._record_startup = keeping
    model = scaling_model(args.size // 4)
    with stamping(True):
        plan = planner.compile_plan(model, [scaling_spec()])
    planner._record_startup = record
    book, columns = books[0], list(plan.entries.columns)
    assert book is not None and sum(map(len, columns)) >= args.size * 3 // 4 - 4

    def run_base() -> None:
        for column in columns:
            base.EntryColumn.record_startup(column) if type(column).__name__ == "EntryColumn" \
                else base.AliasColumn.record_startup(column)

    def run_mine() -> None:
        for column in columns:
            column.record_startup(book)

    times: dict[str, list[float]] = {"base": [], "mine": []}
    for r in range(args.rounds):
        arms = [("base", run_base), ("mine", run_mine)]
        if r % 2:
            arms.reverse()
        for name, fn in arms:
            for column in columns:  # as the compile finds them (nothing to free)
                for entry in column.entries:
                    entry.startup_data = None
            gc.collect()
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    for name, xs in times.items():
        print(f"{name} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
    wins = sum(m < b for b, m in zip(times["base"], times["mine"]))
    print(f"mine faster than base in {wins} of {args.rounds} rounds")


if __name__ == "__main__":
    main()
