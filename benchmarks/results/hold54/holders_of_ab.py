"""In-process A/B of ``holders_of`` with the compile's held columns at 100k (the table's
entries, the walk's objects): the base tree's ``accessors`` module (loaded by path) vs this
tree's, alternating (base first in even rounds). Checks first that both answers are equal
(dicts by identity).

    PYTHONPATH=. python3 benchmarks/results/hold54/holders_of_ab.py --base /tmp/base_hold54
"""

import argparse
import importlib.util
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
plan, held, _ = held_plan(args.size)
h = plan.holders
call = (h.hops.objects, h.model, h.table.entries, held)


def ids(located: tuple) -> tuple:
    return [id(d) for d in located[0]], located[1], located[2]


assert ids(base.holders_of(*call)) == ids(accessors.holders_of(*call))
print("equal answers:", True, len(held), "columns")
times: dict[str, list[float]] = {"base": [], "mine": []}
for r in range(args.rounds):
    order = [("base", base.holders_of), ("mine", accessors.holders_of)]
    if r % 2:
        order.reverse()
    for name, fn in order:
        s = time.process_time()
        fn(*call)
        times[name].append(time.process_time() - s)
for k, xs in times.items():
    print(f"{k:5s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
wins = sum(m < b for b, m in zip(times["base"], times["mine"]))
print(f"mine faster in {wins} of {args.rounds} rounds")
