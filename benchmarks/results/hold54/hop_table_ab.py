"""In-process A/B of the owner walk (``HopTable.__init__``) on the paths ``Holders.bind``
walks at 100k (the sources' owners, then every derived tensor's): the base tree's accessors
module (loaded by path) vs this tree's, alternating (base first in even rounds). Checks first
that both tables' fields are equal.

    PYTHONPATH=. python3 benchmarks/results/hold54/hop_table_ab.py --base /tmp/base_hold54
"""

import argparse
import importlib.util
import operator
import statistics
import sys
import time
from pathlib import Path

from derivgraph.runtime import accessors

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=15)
args = parser.parse_args()
found = importlib.util.spec_from_file_location("base_accessors",
                                               f"{args.base}/derivgraph/runtime/accessors.py")
base = sys.modules[found.name] = importlib.util.module_from_spec(found)
found.loader.exec_module(base)
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
times: dict[str, list[float]] = {"base": [], "mine": []}
for r in range(args.rounds):
    order = [("base", base), ("mine", accessors)]
    if r % 2:
        order.reverse()
    for name, mod in order:
        s = time.process_time()
        mod.HopTable(h.model, paths)
        times[name].append(time.process_time() - s)
for k, xs in times.items():
    print(f"{k:5s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
wins = sum(m < b for b, m in zip(times["base"], times["mine"]))
print(f"mine faster in {wins} of {args.rounds} rounds")
