"""Interleaved A/B of the pieces evaluate81 changes, one subprocess per round and tree
(``PYTHONPATH`` = the tree): after one untimed warm-up compile, one timed compile at SIZE with
the pieces wrapped (perf_counter, ms): ``_evaluate_all``, ``adopt_or_allocate``, ``_lower``'s
``_tensor_values`` calls, the whole ``compile_plan``; and the young objects after it.

    python3 ab_pieces.py SIZE ROUNDS TREE_A TREE_B        (driver)
"""
import json
import os
import subprocess
import sys

CHILD = r'''
import functools, gc, json, sys, time
import derivgraph.planner as planner
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spent = {}
def wrap(mod, name):
    real = getattr(mod, name)
    @functools.wraps(real)
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
    setattr(mod, name, timed)
for n in ("_evaluate_all", "adopt_or_allocate", "_tensor_values", "_columns_equal"):
    wrap(planner, n)
size = int(sys.argv[1])
spec = scaling_spec()
for i in range(2):
    spent.clear()
    model = scaling_model(size // 4)
    gc.collect(); gc.disable()
    t = time.perf_counter()
    plan = planner.compile_plan(model, [spec])
    total = time.perf_counter() - t
    young = len(gc.get_objects(0))
    t = time.perf_counter(); gc.collect(0); debt = time.perf_counter() - t
    gc.enable()
    del plan, model
print(json.dumps({**{k: v * 1e3 for k, v in spent.items()}, "compile": total * 1e3,
                  "gc0": debt * 1e3, "young": young}))
'''


def main() -> None:
    size, rounds, trees = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:5]
    out: dict[str, list[dict]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree in (trees if r % 2 == 0 else trees[::-1]):
            env = dict(os.environ, PYTHONPATH=tree)
            res = subprocess.run([sys.executable, "-c", CHILD, str(size)], env=env, cwd=tree,
                                 capture_output=True, text=True, check=True)
            out[tree].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print("load:", os.getloadavg())
    for tree, runs in out.items():
        keys = runs[0].keys()
        print(tree)
        for k in keys:
            vals = sorted(r[k] for r in runs)
            print(f"  {k:20s} min {vals[0]:9.1f} median {vals[len(vals) // 2]:9.1f}")


main()
