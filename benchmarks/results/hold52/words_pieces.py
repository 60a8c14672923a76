"""hold52: the storage words taken at ``prepare`` (``Addresses``, hold=False) over a stamped
plan's sources and its derived tensors' startup storages, re-run on one plan (process CPU
seconds, medians of ``--reps``); run once per tree, alternating.

    PYTHONPATH=TREE python benchmarks/results/hold52/words_pieces.py [--size 100000] [--reps 7]
"""

import argparse
import gc
import statistics
import time

from derivgraph.addresses import addresses
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=7)
args = parser.parse_args()
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [spec])
sources = plan.holders._source_checks[2].tensors
startup = plan.tensors.startup_addresses().tensors
print(len(sources), "sources,", len(startup), "startup tensors")
pieces = {
    "words: sources": lambda: addresses(sources, hold=False),
    "words: startup storages": lambda: addresses(startup, hold=False),
}
out = {k: [] for k in pieces}
for _ in range(args.reps):
    for name, fn in pieces.items():
        start = time.process_time()
        assert fn() is not None
        out[name].append(time.process_time() - start)
for name, xs in out.items():
    print(f"{name:24s} {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
