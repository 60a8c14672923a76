"""In-process A/B of the per-reload code hold47 touched: ``holders_of`` as a re-walk or a rebind
after rebuilt owners calls it (``Holders.refresh``, no columns), the base module (loaded by
path from ``--base``) vs this tree's, alternating (base first in even rounds), on one stamped
100k scaling plan, answers checked equal first. ``Plan.run``/``refill``/``RefillTable.take``
and the guard's restore are not changed by this branch. Process seconds, medians. Run from
the worktree root:

    PYTHONPATH=. python3 benchmarks/results/hold47/reload_ab.py --base /tmp/base_hold47
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import accessors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
args = parser.parse_args()
found = importlib.util.spec_from_file_location("base_accessors",
                                               f"{args.base}/derivgraph/runtime/accessors.py")
base = importlib.util.module_from_spec(found)
sys.modules["base_accessors"] = base
found.loader.exec_module(base)

gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
h = plan.holders
objects, model, entries = h.hops.objects, plan.model, h.table.entries


def ids(located):
    return [id(d) for d in located[0]], located[1], located[2]


assert ids(base.holders_of(objects, model, entries)) == ids(accessors.holders_of(objects, model,
                                                                                   entries))
print(f"plan: {len(plan.entries)} entries, {len(entries)} held; answers equal", flush=True)
times = {"base": [], "mine": []}
for r in range(args.rounds):
    order = [("base", base), ("mine", accessors)]
    for name, module in order if r % 2 == 0 else order[::-1]:
        gc.collect()
        t0 = time.process_time()
        module.holders_of(objects, model, entries)
        times[name].append(time.process_time() - t0)
b, m = times["base"], times["mine"]
print(f"holders_of (no columns): base {statistics.median(b):.4f} s, mine "
      f"{statistics.median(m):.4f} s, mine faster {sum(y < x for x, y in zip(b, m))}/"
      f"{args.rounds}")
print("base ", " ".join(f"{x:.4f}" for x in b))
print("mine ", " ".join(f"{x:.4f}" for x in m))
