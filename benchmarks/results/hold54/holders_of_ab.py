"""In-process A/B of ``holders_of`` with the compile's held columns at 100k (the table's
entries, the walk's objects): the base tree's ``accessors`` module (loaded by path) vs this
tree's, alternating (base first in even rounds). Checks first that both answers are equal
(dicts by identity).

    PYTHONPATH=. python3 benchmarks/results/hold54/holders_of_ab.py --base /tmp/base_hold54
"""

import sys
from pathlib import Path

from derivgraph.runtime import accessors

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from module_ab import ab_args, alternate, base_module, report  # noqa: E402
from stamped_plan import held_plan  # noqa: E402

args = ab_args(__doc__, 15)
base = base_module(args.base, "derivgraph/runtime/accessors.py")
plan, held, _ = held_plan(args.size)
h = plan.holders
call = (h.hops.objects, h.model, h.table.entries, held)


def ids(located: tuple) -> tuple:
    return [id(d) for d in located[0]], located[1], located[2]


assert ids(base.holders_of(*call)) == ids(accessors.holders_of(*call))
print("equal answers:", True, len(held), "columns")
report(alternate(args.rounds, {"base": lambda: base.holders_of(*call),
                               "mine": lambda: accessors.holders_of(*call)}))
