"""In-process A/B of ``Holders.refresh`` with the compile's held columns at 100k: the base
tree's ``holders`` module (loaded by path; it finds each column's rows again in
``holders_of``) vs this tree's (the rows found once), on one plan, alternating (base first in
even rounds). Checks first that both make the same table.

    PYTHONPATH=. python3 benchmarks/results/hold54/refresh_ab.py --base /tmp/base_hold54
"""

import sys
from pathlib import Path

from derivgraph.runtime import holders

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from module_ab import ab_args, alternate, base_module, report  # noqa: E402
from stamped_plan import held_plan  # noqa: E402

args = ab_args(__doc__, 15)
base = base_module(args.base, "derivgraph/runtime/holders.py")
plan, held, _ = held_plan(args.size)
h = plan.holders


def table() -> tuple:
    t = h.table
    return ([id(e) for e in t.entries], [id(d) for d in t.dicts], t.keys, t.fast,
            [id(e) for e in h._scalars])


base.Holders.refresh(h, held)
want = table()
holders.Holders.refresh(h, held)
assert table() == want
print("same table:", True, len(held), "columns")
report(alternate(args.rounds, {"base": lambda: base.Holders.refresh(h, held),
                               "mine": lambda: holders.Holders.refresh(h, held)}))
