"""Process seconds of the lowering half's per-tensor fact readers in one stamped 100k compile.

Each reader is wrapped to add up its own process time (calls and refs counted), after a
warm-up compile; ``--repeat`` compiles, medians. From the worktree root:

    PYTHONPATH=. python3 benchmarks/results/facts42/fact_reads.py --repeat 3
"""

import argparse
import gc
import json
import statistics
import time
from collections import defaultdict

from derivgraph import planner
from derivgraph.compiler import lower_layers, schedule, schedule_layers
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import storage
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--repeat", type=int, default=3)
args = parser.parse_args()

spent: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)
depth = [0]


def timed(owner, name, label):
    fn = getattr(owner, name)

    def wrapper(*a, **k):
        if depth[0]:  # nested inside another timed reader: counted there
            return fn(*a, **k)
        depth[0] += 1
        start = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[label] += time.process_time() - start
            calls[label] += 1
            depth[0] -= 1
    setattr(owner, name, wrapper)


timed(lower_layers, "_columns_hold", "lower: layer proof (_columns_hold)")
timed(lower_layers, "layer_facts", "lower: layer_facts")
timed(schedule_layers, "_addresses", "schedule: row addresses (_addresses)")
timed(schedule_layers, "_same_key_facts", "codegen: row key facts (_same_key_facts)")
timed(schedule, "_storage_addresses", "schedule: _storage_addresses")
timed(planner, "_bits_equal_all", "bit check: _bits_equal_all")
timed(storage.BoundTensors, "bound_values", "bound_values (elsewhere)")

spec = scaling_spec()
compile_plan(scaling_model(250), [spec])
rows = []
for _ in range(args.repeat):
    spent.clear()
    calls.clear()
    model = scaling_model(args.size // 4)
    gc.collect()
    with stamping(True):
        compile_plan(model, [spec])
    rows.append((dict(spent), dict(calls)))
    del model
out = {k: {"s": round(statistics.median(r[0].get(k, 0.0) for r in rows), 4),
           "calls": rows[0][1].get(k, 0)} for k in rows[0][0]}
for k, v in out.items():
    print(f"{k:44} {v['s']:.4f} s  ({v['calls']} calls)")  # noqa: T201
print(json.dumps(out))  # noqa: T201
