"""The 100k scaling compile's startup pass, chunked flat (this tree) against its foreach form
(the same plan installed with ``Programs.flat`` off: the form the base tree's pass takes at
100k, every group being over ``flat.MAX_ELEMENTS`` there), in one process, interleaved (the
order alternating per round), each run after ``gc.collect()`` with the collector off; then
every derived tensor bit-checked: the outputs zeroed, the chunked pass run, each compared with
the foreach pass's value and with the formula.

    PATH=/work/venv/bin:$PATH PYTHONPATH=. python3 benchmarks/results/chunk69/pass_ab.py \
        [--layers 25000] [--rounds 21]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int, default=25000)
parser.add_argument("--rounds", type=int, default=21)
args = parser.parse_args()

model = scaling_model(args.layers)
plan = compile_plan(model, [scaling_spec()])
chunked = plan.program
plan.programs.flat = False
plan.install(plan.steps)  # a fresh namespace: the chunked function keeps its own globals
foreach = plan.program
print(f"chunked: {chunked.source.count('.index_copy_(')} flat chunks, "
      f"{chunked.source.count('_foreach_')} foreach calls; foreach form: "
      f"{foreach.source.count('_foreach_')} foreach calls")


def timed(fn) -> float:  # noqa: ANN001
    gc.collect()
    gc.disable()
    try:
        with torch.no_grad():
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
    finally:
        gc.enable()


load = [os.getloadavg()[0]]
samples: dict[str, list[float]] = {"foreach": [], "chunked": []}
for r in range(args.rounds):
    order = (("foreach", foreach), ("chunked", chunked)) if r % 2 == 0 else \
        (("chunked", chunked), ("foreach", foreach))
    for name, program in order:
        samples[name].append(timed(program.fn))
load.append(os.getloadavg()[0])
wins = sum(c < f for f, c in zip(samples["foreach"], samples["chunked"]))
result = {name: {"median_ms": round(statistics.median(s) * 1e3, 2),
                 "min_ms": round(min(s) * 1e3, 2)} for name, s in samples.items()}
result["chunked_beat_foreach"] = f"{wins} of {args.rounds}"
result["load1"] = load
print(json.dumps(result))

# exactness: every derived tensor the pass writes, zeroed, then written by the chunked pass
layers = list(model.layers)
written = [t for layer in layers for t in (layer.inv, layer.prod)]
with torch.no_grad():
    foreach.fn()
    want = [t.clone() for t in written]
    for t in written:
        t.zero_()
    chunked.fn()
same = all(map(torch.equal, written, want))
formula = all(torch.equal(layer.inv, 1.0 / layer.scale)
              and torch.equal(layer.prod, layer.scale * layer.weight) for layer in layers)
print(json.dumps({"bit_equal_to_foreach": same, "equal_to_formula": formula,
                  "tensors_checked": len(written)}))
assert same and formula
