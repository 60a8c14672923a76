"""In-process A/B of adopt62's two glue pieces at 100k (supporting evidence), on one stamped
compile's own entry columns (the plan's, after the compile; base planner loaded by path):

* ``paths``: the owner paths of the columns' rows, base (``_owner_paths`` reading every
  column's rows' paths, then each ``bind`` reading them again) against mine (each column's
  read once, ``EntryColumn.owner_paths``, handed to ``_owner_paths`` and the binds);
* ``non_persistent``: the non-persistent buffer names of each column's owners, base (the
  per-owner generator, four columns) against ``entry_columns._non_persistent``.

Answers asserted equal first; arms alternate, order reversed every other round.

    PYTHONPATH=. python3 benchmarks/results/adopt62/glue62_ab.py --base BASE_TREE --rounds 15
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

import derivgraph.planner as planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.runtime.entry_columns import EntryColumn, _non_persistent  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

_PATH = operator.attrgetter("node.owner_path")


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/planner.py")
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    columns = list(plan.entries.columns)
    rest = [(e, None) for e in plan.entries.generic.values()]

    def base_paths() -> set[str]:
        got = base._owner_paths(rest, columns)
        for column in columns:  # each bind's own read
            list(map(_PATH, column.entries))
        return got

    def mine_paths() -> set[str]:
        return planner._owner_paths(rest, list(map(EntryColumn.owner_paths, columns)))

    def base_np() -> list[bool]:
        return [any(c.name in o._non_persistent_buffers_set for o in c.owners) for c in columns]

    def mine_np() -> list[bool]:
        return [_non_persistent(c.owners, c.name) for c in columns]

    assert base_paths() == mine_paths() and base_np() == mine_np()
    print(f"columns {len(columns)}, rows {sum(map(len, columns))}")
    print("== paths")
    report(alternate(args.rounds, {"base": base_paths, "mine": mine_paths}))
    print("== non_persistent")
    report(alternate(args.rounds, {"base": base_np, "mine": mine_np}))


if __name__ == "__main__":
    main()
