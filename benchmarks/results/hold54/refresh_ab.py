"""In-process A/B of ``Holders.refresh`` with the compile's held columns at 100k: the base
tree's ``holders`` module (loaded by path; it finds each column's rows again in
``holders_of``) vs this tree's (the rows found once), on one plan, alternating (base first in
even rounds). Checks first that both make the same table.

    PYTHONPATH=. python3 benchmarks/results/hold54/refresh_ab.py --base /tmp/base_hold54
"""

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from derivgraph.runtime import holders

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=15)
args = parser.parse_args()
found = importlib.util.spec_from_file_location("base_holders",
                                               f"{args.base}/derivgraph/runtime/holders.py")
base = sys.modules[found.name] = importlib.util.module_from_spec(found)
found.loader.exec_module(base)
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
times: dict[str, list[float]] = {"base": [], "mine": []}
for r in range(args.rounds):
    order = [("base", base.Holders.refresh), ("mine", holders.Holders.refresh)]
    if r % 2:
        order.reverse()
    for name, fn in order:
        s = time.process_time()
        fn(h, held)
        times[name].append(time.process_time() - s)
for k, xs in times.items():
    print(f"{k:5s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
wins = sum(m < b for b, m in zip(times["base"], times["mine"]))
print(f"mine faster in {wins} of {args.rounds} rounds")
