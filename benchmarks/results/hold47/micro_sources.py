"""In-process A/B of hold47's second change on one stamped 100k scaling plan: the startup
record's source read with a fresh reader (the base) vs through adoption's reader after its
proof (the written names, ``PathReader.untouched_by``), alternating ``--rounds`` times on
the same plan, the two reads checked equal first. Adoption's reader is the compile's own
(kept by a wrapper). Process seconds. Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/hold47/micro_sources.py --rounds 11 [--plain]
"""

import argparse
import gc
import operator
import statistics
import time

from derivgraph import planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=11)
parser.add_argument("--plain", action="store_true", help="stamping off (the plain path)")
args = parser.parse_args()

kept = {}
_record = planner._record_startup
_held = planner.held_columns


def keep_reader(plan, columns=(), in_columns=frozenset(), owners=None):
    kept["owners"] = owners
    return _record(plan, columns, in_columns, owners)


def keep_columns(columns, others, owners):
    kept["columns"], kept["others"] = columns, others
    return _held(columns, others, owners)


planner._record_startup, planner.held_columns = keep_reader, keep_columns
gc.disable()
model = scaling_model(args.size // 4)
with stamping(not args.plain):
    plan = planner.compile_plan(model, [scaling_spec()])
reader, columns, others = kept["owners"], kept["columns"], kept["others"]
assert reader is not None, "the compile did not take adoption's reader"
paths = [*plan.graph.sources(), *plan.folds.entries]
name = operator.attrgetter("node.decl.name")


def fresh():
    return dict(zip(paths, map(PathReader(model).get, paths)))


def warm():
    written = {c.name for c in columns} | set(map(name, others))
    assert reader.untouched_by(written)
    return dict(zip(paths, map(reader.get, paths)))


a, b = fresh(), warm()
assert list(a) == list(b) and all(x is y for x, y in zip(a.values(), b.values()))
print(f"plan: {len(plan.entries)} entries, {len(paths)} source paths; reads equal", flush=True)
base, mine = [], []
for _ in range(args.rounds):
    for out, f in ((base, fresh), (mine, warm)):
        gc.collect()
        t0 = time.process_time()
        f()
        out.append(time.process_time() - t0)
faster = sum(m < b for b, m in zip(base, mine))
print(f"source read: fresh {statistics.median(base):.4f} s, adoption's reader + proof "
      f"{statistics.median(mine):.4f} s, delta {statistics.median(mine) - statistics.median(base):+.4f}"
      f" s, faster {faster}/{args.rounds}")
print("base ", " ".join(f"{x:.4f}" for x in base))
print("mine ", " ".join(f"{x:.4f}" for x in mine))
proof = []
for _ in range(args.rounds):
    t0 = time.process_time()
    reader.untouched_by({c.name for c in columns} | set(map(name, others)))
    proof.append(time.process_time() - t0)
print(f"the proof alone: {statistics.median(proof):.4f} s median ({len(reader._owners)} owner paths read)")
