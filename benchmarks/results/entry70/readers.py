"""Every per-row reader and writer of the stamped columns' ``Entry`` objects, counted: the
entries ``adoption_columns.allocated_rows``/``alias_rows`` make are swapped for a subclass
that counts each attribute read and write by the calling function (its file and name; a
C-level ``map``/``attrgetter`` sweep counts against the Python function running it), over
one compile of the scaling model and two reloads (``plan.run()``). Rows with fewer than
``--min`` accesses are left out. Usage (from the tree root):

    PYTHONPATH=. python3 benchmarks/results/entry70/readers.py [--layers 1000] [--min 500]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

from derivgraph import adoption_columns, planner
from derivgraph.runtime.entry import Entry
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

counts: Counter[tuple[str, str, str, str, str]] = Counter()
phase = ["compile"]


def _caller() -> tuple[str, str]:
    code = sys._getframe(2).f_code
    return code.co_filename.split("derivgraph/")[-1], code.co_name


class Counted(Entry):
    """An :class:`Entry` that counts its attribute reads and writes by caller."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        counts[(phase[0], "get", name, *_caller())] += 1
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        counts[(phase[0], "set", name, *_caller())] += 1
        object.__setattr__(self, name, value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=1000)
    parser.add_argument("--min", type=int, default=500)
    args = parser.parse_args()
    adoption_columns.Entry = Counted  # type: ignore[misc]
    plan = planner.compile_plan(scaling_model(args.layers), [scaling_spec()])
    rows = sum(map(len, plan.entries.columns))
    print(f"{args.layers} layers, {len(plan.entries)} entries, {rows} in columns "
          f"({[(c.name, len(c)) for c in plan.entries.columns]})")
    for name in ("run1", "run2"):
        phase[0] = name
        plan.run()
    print("count phase get/set attribute file function")
    for key, n in sorted(counts.items()):
        if n >= args.min:
            print(n, *key)


if __name__ == "__main__":
    main()
