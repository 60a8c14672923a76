"""In-process A/B of ``engine._by_key`` and ``RefillTable`` on one stamped 100k plan's
targets (the compile's book): the base engine loaded by path, alternating, medians.

    PYTHONPATH=. /work/venv/bin/python benchmarks/results/refill53/by_key_ab.py --base /tmp/base53
"""

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from derivgraph.runtime import engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stamped_plan import held_plan  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--rounds", type=int, default=11)
args = parser.parse_args()
spec_ = importlib.util.spec_from_file_location("base_engine", f"{args.base}/derivgraph/runtime/engine.py")
base = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(base)
plan, _, seen = held_plan(100000)
book, table = seen["book"], plan.holders.table
targets, consts, eng = plan._refill_targets(), set(plan.constant_entries), set(plan._opaque())
position = dict(zip(table.id_list, range(len(table))))
held = book.of([table.storages[position[t]] for t in targets])
keys = [engine._record_key(r) for r in held]
assert base._by_key(held, base._record_key) == engine._by_key(held, engine._record_key)
assert base._by_key(keys, base._as_key) == engine._by_key(keys, engine._as_key)
pieces = {
    "_by_key (records)": lambda m: m._by_key(held, m._record_key),
    "_by_key (plain keys)": lambda m: m._by_key(keys, m._as_key),
    "RefillTable": lambda m: m.RefillTable(table, targets, consts, eng, book),
}
out = {(n, w): [] for n in pieces for w in ("base", "this")}
for r in range(args.rounds):
    for name, fn in pieces.items():
        for who, m in (("base", base), ("this", engine)) if r % 2 == 0 else (("this", engine), ("base", base)):
            gc.collect()
            start = time.process_time()
            fn(m)
            out[name, who].append(time.process_time() - start)
for name in pieces:
    b, t = out[name, "base"], out[name, "this"]
    faster = sum(x < y for x, y in zip(t, b))
    print(f"{name:22s} base {statistics.median(b):.4f}  this {statistics.median(t):.4f}  "
          f"this faster {faster}/{len(b)}")
    print(f"  raw base {[round(x, 4) for x in b]}")
    print(f"  raw this {[round(x, 4) for x in t]}")
