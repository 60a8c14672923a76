"""In-process timing of ``Holders.walk`` (the owner walk), the sources' addresses and the whole
``Holders.bind`` on one stamped 100k plan: medians of ``--reps`` process-time runs. Run it on
the base tree and on this one, alternating processes.

    PYTHONPATH=TREE python3 benchmarks/results/cols48/bind_parts.py [--reps 15]
"""

import argparse
import gc
import statistics
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import entry
from derivgraph.runtime.holders import Holders
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--reps", type=int, default=15)
args = parser.parse_args()
seen = {}
bind = Holders.bind


def spy(self, sources, columns=()):
    seen["columns"] = columns = list(columns)
    return bind(self, sources, columns)


Holders.bind = spy
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])  # warm-up
gc.disable()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [spec])
h = plan.holders
sources, held = plan.tensors.sources, seen["columns"]
tensors = list(sources.values())
owner_paths = [p.rpartition(".")[0] for p in sources]
sweep = getattr(entry, "addresses_of", lambda ts: list(map(entry.address_of, ts)))
pieces = {
    "walk": lambda: h.walk(owner_paths),
    "source addresses": lambda: sweep(tensors),
    "holders.bind": lambda: bind(h, sources, held),
}
out = {k: [] for k in pieces}
for _ in range(args.reps):
    for name, fn in pieces.items():
        start = time.process_time()
        fn()
        out[name].append(time.process_time() - start)
bind(h, sources, held)
assert list(map(entry.address_of, tensors)) == sweep(tensors)
hops = h.hops
print("hops", len(hops.prefixes), "objects", len(hops.objects), "slow", len(hops.slow),
      "first", hops.prefixes[:3], "intact", hops.intact(), "moved", plan.moved())
for name, xs in out.items():
    print(f"{name:18s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
