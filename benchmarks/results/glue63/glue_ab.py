"""In-process A/B of glue63's two pieces on one 100k stamped compile's real objects (captured
by spies during the compile, in this tree): the entries outside the entry columns (base:
each entry's id read, every column id in a set, each id looked up; mine:
``planner._outside_columns`` with adoption's ids and positions) and the bit check's column
join (base tree's ``_joined`` against this tree's, on each written column's eager values);
the entry columns' owner paths (base: read from every entry; mine: adoption's, copied).

    cd TREE && PYTHONPATH=. python3 benchmarks/results/glue63/glue_ab.py --base /tmp/base_glue63
"""

from __future__ import annotations

import operator
import sys
from itertools import compress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

_NODE_ID, _FIRST = operator.attrgetter("node.id"), operator.itemgetter(0)
_OWNER_PATH = operator.attrgetter("node.owner_path")


def main() -> None:
    args = ab_args(__doc__, 21)
    base = base_module(args.base, "derivgraph/planner.py")
    outside_calls: list[Any] = []
    joined_calls: list[Any] = []
    planned_seen: list[Any] = []
    real_outside, real_joined, real_prepare = (planner._outside_columns, planner._joined,
                                               planner._prepare)

    def prepare(*a: Any) -> Any:
        got = real_prepare(*a)
        planned_seen.append(got[2])
        return got

    def outside(ids: Any, columns: Any, proven: Any, rest: Any) -> Any:
        outside_calls.append((ids, list(columns), list(proven), rest))
        return real_outside(ids, columns, proven, rest)

    def joined(tensors: Any, shape: Any, row_major: bool = False) -> Any:
        joined_calls.append((list(tensors), shape, row_major))
        return real_joined(tensors, shape, row_major)

    planner._prepare, planner._outside_columns, planner._joined = prepare, outside, joined
    with stamping(True):
        planner.compile_plan(scaling_model(250), [scaling_spec()])
        outside_calls.clear()
        joined_calls.clear()
        planned_seen.clear()
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    planned = planned_seen[0]
    ids, columns, proven, rest = outside_calls[0]

    def base_outside() -> list[int]:
        mine_ids = list(map(_NODE_ID, map(_FIRST, planned)))
        in_columns = {i for column in columns for i in column.ids}
        return list(compress(range(len(mine_ids)), map(operator.not_,
                                                       map(in_columns.__contains__, mine_ids))))

    def mine_outside() -> list[int]:
        return real_outside(ids, columns, proven, rest)

    assert base_outside() == mine_outside()
    print(f"{len(plan.entries)} entries, {len(columns)} columns, {len(rest)} outside")
    report(alternate(args.rounds, {"base": base_outside, "mine": mine_outside}))
    print(f"_joined: {len(joined_calls)} columns of {[len(t) for t, _, _ in joined_calls]}")

    def base_joined() -> None:
        for tensors, shape, _ in joined_calls:
            base._joined(tensors, shape)

    def mine_joined() -> None:
        for tensors, shape, row_major in joined_calls:
            real_joined(tensors, shape, row_major)

    for tensors, shape, row_major in joined_calls:
        a, b = base._joined(tensors, shape), real_joined(tensors, shape, row_major)
        assert a is not None and b is not None and a.data_ptr() == b.data_ptr() \
            and a.shape == b.shape
    report(alternate(args.rounds, {"base": base_joined, "mine": mine_joined}))

    def base_paths() -> list[list[str]]:
        return [list(map(_OWNER_PATH, column.entries)) for column in columns]

    def mine_paths() -> list[list[str]]:
        return [column.owner_paths() for column in columns]

    assert base_paths() == mine_paths() and all(c.paths is not None for c in columns)
    print("owner paths of the 4 columns")
    report(alternate(args.rounds, {"base": base_paths, "mine": mine_paths}))


if __name__ == "__main__":
    main()
