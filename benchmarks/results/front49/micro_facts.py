"""Micro: a template's facts checked on every later row, per row (facts_hold) vs by columns
(prove_rows), on the stamped scaling workload (formula and params templates).

    PYTHONPATH=TREE python3 micro_facts.py [--size 100000] [--repeat 5]
"""

import argparse
import gc
import statistics
import time

from derivgraph.compiler import build, stamp, stamp_params
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.stamp import facts_hold
from derivgraph.compiler.stamp_columns import prove_rows
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--repeat", type=int, default=5)
args = parser.parse_args()
made = {}
init, pinit = stamp.Stamper.__init__, stamp_params.ParamStamper.__init__


def keep(self, *a, **k):
    init(self, *a, **k)
    made["stamper"] = self


def pkeep(self, *a, **k):
    pinit(self, *a, **k)
    made["params"] = self


stamp.Stamper.__init__, stamp_params.ParamStamper.__init__ = keep, pkeep
model = scaling_model(args.size // 4)
bounds = match_specs(model, [scaling_spec()])
graph = build.build_graph(model, bounds)
(template,), = made["stamper"].templates.values()
((preads, _),), = made["params"].templates.values()
params = [{"E": 8}] * len(bounds)
rows = bounds[1:]
got = {"facts_hold formula": [], "prove_rows formula": [], "facts_hold params": [],
       "prove_rows params": []}
gc.collect()
gc.disable()  # as compile_plan has it
for _ in range(args.repeat):
    for label, reads in (("formula", template.reads), ("params", preads)):
        t = time.process_time()
        a = [facts_hold(graph, reads, b, p) for b, p in zip(rows, params)]
        got[f"facts_hold {label}"].append(time.process_time() - t)
        t = time.process_time()
        c = prove_rows(graph, reads, rows, params[1:])
        got[f"prove_rows {label}"].append(time.process_time() - t)
        assert a == c
for k, v in got.items():
    print(f"{k:22s} median {statistics.median(v):.4f} s  runs {[round(x, 4) for x in v]}")
