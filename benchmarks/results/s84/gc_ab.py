"""Interleaved subprocess rounds, base tree vs this tree: one warm compile at SIZE each,
then the young objects, the references their containers hold (list/tuple/dict items: what
the first gc.collect(0) walks) and that collection's time. Usage: gc_ab.py BASE MINE ROUNDS
[SIZE]. Prints one JSON line per run and the medians."""
import json, statistics, subprocess, sys
CHILD = r'''
import gc, json, sys, time
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]); spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
t = time.perf_counter(); plan = compile_plan(model, [spec]); t = time.perf_counter() - t
objs = gc.get_objects(0)
n = len(objs); items = sum(len(o) for o in objs if type(o) in (list, tuple, dict))
del objs
g = time.perf_counter(); gc.collect(0); g = time.perf_counter() - g
print(json.dumps({"compile_s": round(t, 4), "young": n, "items": items, "gc0_s": round(g, 4)}))
'''
base, mine, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = sys.argv[4] if len(sys.argv) > 4 else "100000"
out = {"base": [], "mine": []}
for r in range(rounds):
    order = (("base", base), ("mine", mine)) if r % 2 == 0 else (("mine", mine), ("base", base))
    for tag, tree in order:
        got = subprocess.run([sys.executable, "-c", CHILD, size], cwd="/tmp", capture_output=True,
                             text=True, env={"PYTHONPATH": tree, "PATH": "/usr/bin:/bin"})
        row = json.loads(got.stdout.strip().splitlines()[-1])
        row["tag"] = tag
        print(json.dumps(row), flush=True)
        out[tag].append(row)
for tag, rows in out.items():
    print(tag, {k: statistics.median(r[k] for r in rows)
                for k in ("compile_s", "young", "items", "gc0_s")})
