"""In-process A/B of the owner walk (``HopTable.__init__``) on the paths ``Holders.bind``
walks at 100k (the sources' owners, then every derived tensor's): the base tree's accessors
module (loaded by path) vs this tree's, alternating (base first in even rounds). Checks first
that both tables' fields are equal.

    PYTHONPATH=. python3 benchmarks/results/hold54/hop_table_ab.py --base /tmp/base_hold54
"""

import operator
import sys
from pathlib import Path

from derivgraph.runtime import accessors

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from module_ab import ab_args, alternate, base_module, report  # noqa: E402
from stamped_plan import held_plan  # noqa: E402

args = ab_args(__doc__, 15)
base = base_module(args.base, "derivgraph/runtime/accessors.py")
plan, _held, _ = held_plan(args.size)
h = plan.holders
paths = [s.rpartition(".")[0] for s, *_ in h._sources] \
    + list(map(operator.attrgetter("node.owner_path"), h.entries.values()))


def fields(t: object) -> tuple:
    return (list(t.objects), [id(o) for o in t.objects.values()], t.prefixes, t.parts,
            t.parents, t.children, [id(d) for d in t.dicts], t.keys,
            [id(e) for e in t.expected], t.slow)


assert fields(base.HopTable(h.model, paths)) == fields(accessors.HopTable(h.model, paths))
print("equal fields:", True, len(paths), "paths")
report(alternate(args.rounds, {"base": lambda: base.HopTable(h.model, paths),
                               "mine": lambda: accessors.HopTable(h.model, paths)}))
