"""In-process A/B of ``BoundTensors.bound_values`` (facts42), on one 100k scaling plan (stamped).

The calls a stamped 100k compile makes (refs and ``missing`` of each, recorded while it runs:
the layer proof, the schedule's row addresses, codegen) are replayed on the compiled plan's
bound tensors with the base tree's method (its module file loaded by path) and this tree's,
alternating ``--rounds`` times; each call's results compared by identity first. Process
seconds (all the calls of one compile per sample), medians. From the worktree root:

    PYTHONPATH=. python3 benchmarks/results/facts42/micro.py --base /tmp/base_facts42
"""

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import storage
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser(description="in-process A/B of bound_values, base against this tree")
parser.add_argument("--base", required=True, help="the base tree (git archive f728e22)")
parser.add_argument("--size", type=int, default=100000, help="derived tensors (4 a layer)")
parser.add_argument("--rounds", type=int, default=7, help="alternating base/mine rounds")
args = parser.parse_args()

found = importlib.util.spec_from_file_location("base_storage", f"{args.base}/derivgraph/runtime/storage.py")
base = sys.modules[found.name] = importlib.util.module_from_spec(found)
found.loader.exec_module(base)

calls = []
mine_fn = storage.BoundTensors.bound_values


def recording(self, refs, missing=None):
    refs = list(refs)
    calls.append((refs, missing))
    return mine_fn(self, refs, missing)


storage.BoundTensors.bound_values = recording
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [scaling_spec()])
storage.BoundTensors.bound_values = mine_fn
tensors = plan.tensors
base_fn = base.BoundTensors.bound_values
for refs, missing in calls:
    a, b = base_fn(tensors, refs, missing), mine_fn(tensors, refs, missing)
    assert len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def seconds(fn):
    gc.collect()
    start = time.process_time()
    for refs, missing in calls:
        fn(tensors, refs, missing)
    return time.process_time() - start


gc.disable()
pairs = [(seconds(base_fn), seconds(mine_fn)) for _ in range(args.rounds)]
row = {"calls": len(calls), "refs": sum(len(r) for r, _ in calls),
       "base": round(statistics.median(a for a, _ in pairs), 4),
       "mine": round(statistics.median(c for _, c in pairs), 4),
       "mine_faster": sum(c < a for a, c in pairs),
       "pairs": [(round(a, 4), round(c, 4)) for a, c in pairs]}
print(f"bound_values  base {row['base']:.4f}  mine {row['mine']:.4f}  "  # noqa: T201
      f"faster {row['mine_faster']}/{args.rounds}")
print(json.dumps(row))  # noqa: T201
