"""In-process interleaved A/B of what evaluate81 changes, on the 100k compile's own objects:
old = the source and op columns' values put in the env by id, fill_derived's inserts,
adoption's extras and targets read by id (4 columns), the constant entries' values read by id;
new = the same through ColumnValues (keep, fill_derived keeping, row_values, take). gc off, ms.

    PYTHONPATH=$PWD python3 ab_env_inserts.py [SIZE] [ROUNDS]
"""
import gc
import os
import statistics
import sys
import time
from itertools import compress, repeat

import torch

import derivgraph.compiler.columns as columns
import derivgraph.planner as planner
from derivgraph.compiler.layers import closed_layers
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
spec = scaling_spec()
plan = planner.compile_plan(scaling_model(size // 4), [spec])
constant_ids = list(plan.constant_entries)
rows_seen = []
real = columns.fill_derived
planner.fill_derived = lambda rows, env: (rows_seen.append(rows), real(rows, env))[1]
p, values, _, _ = planner._prepare(scaling_model(size // 4), [spec], False, True)
planner.fill_derived = real
rows = rows_seen[-1]
graph = p.graph
tables = closed_layers(graph)
pending = list(values._pending)  # the op columns, then the derived ones
ops = pending[:len(pending) - len(rows)]
base = dict(dict.items(values))  # the env after the walk, without the kept rows
allocated = [table.column(k) for table, k, _, _ in rows]  # adoption reads the 4 derived
assert all(isinstance(v, torch.Tensor) for _, vals in ops for v in vals)


def _tensors(found):
    return dict(compress(zip(constant_ids, found), map(isinstance, found, repeat(torch.Tensor))))


def old(env):
    for ids, vals in ops:
        env.update(zip(ids, vals))
    for table, k, j, shared in rows:  # fill_derived on a plain dict
        ids = table.column(k)
        if j is not None:
            env.update(zip(ids, map(env.__getitem__, table.column(j))))
        else:
            env.update(zip(ids, repeat(env[shared])))
    out = [list(map(env.__getitem__, ids)) for ids in allocated]
    found = list(map(env.get, constant_ids))
    return out, _tensors(found)


def new(env):
    for ids, vals in ops:
        env.keep(ids, vals)
    columns.fill_derived(rows, env)
    out = [columns.row_values(env, ids) for ids in allocated]
    found = env.take(constant_ids)
    return out, _tensors(found)


a, b = old(dict(base)), new(columns.ColumnValues(base))
assert len(a[0]) == len(b[0])
assert all(all(map(lambda x, y: x is y, p_, q)) for p_, q in zip(a[0], b[0]))
assert a[1].keys() == b[1].keys() and all(a[1][k] is b[1][k] for k in a[1])
times = {"old": [], "new": []}
gc.disable()
for r in range(rounds):
    for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
        env = dict(base) if name == "old" else columns.ColumnValues(base)
        t = time.perf_counter()
        (old if name == "old" else new)(env)
        times[name].append((time.perf_counter() - t) * 1e3)
        del env
gc.enable()
print("load", os.getloadavg(), "size", size, "rounds", rounds, "constant ids", len(constant_ids))
for name, ts in times.items():
    ts.sort()
    print(f"{name}: min {ts[0]:.1f} median {statistics.median(ts):.1f} ms")
