"""The 100k scaling compile's code generation (``Programs.install`` inside ``compile_plan``,
process seconds) with the flat path on (this tree: the groups over ``flat.MAX_ELEMENTS`` in
chunks) against off (their foreach form: the base tree's at 100k), in one process, interleaved
(the order alternating per round), each compile after ``gc.collect()``.

    PATH=/work/venv/bin:$PATH PYTHONPATH=. python3 benchmarks/results/chunk70/codegen_ab.py \
        [--layers 25000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time

from derivgraph.planner import compile_plan
from derivgraph.runtime import programs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int, default=25000)
parser.add_argument("--rounds", type=int, default=9)
args = parser.parse_args()

state = {"flat": True, "spent": 0.0}
_init, _install = programs.Programs.__init__, programs.Programs.install


def init(self, *a, **k):  # type: ignore[no-untyped-def]
    _init(self, *a, **k)
    self.flat = state["flat"]


def install(self, *a, **k):  # type: ignore[no-untyped-def]
    t = time.process_time()
    try:
        return _install(self, *a, **k)
    finally:
        state["spent"] += time.process_time() - t


programs.Programs.__init__, programs.Programs.install = init, install  # type: ignore[method-assign]
spec = scaling_spec()
compile_plan(scaling_model(args.layers), [spec])  # warm-up
got: dict[bool, list[float]] = {True: [], False: []}
loads = []
for r in range(args.rounds):
    for flat in ((True, False) if r % 2 else (False, True)):
        model = scaling_model(args.layers)
        gc.collect()
        state["flat"], state["spent"] = flat, 0.0
        plan = compile_plan(model, [spec])
        got[flat].append(state["spent"])
        assert (".index_copy_(" in plan.program.source) is flat
        del plan, model
    loads.append(os.getloadavg()[0])
wins = sum(a < b for a, b in zip(got[True], got[False]))
print(json.dumps({"install_flat_median_s": round(statistics.median(got[True]), 4),
                  "install_foreach_median_s": round(statistics.median(got[False]), 4),
                  "flat_faster": f"{wins} of {args.rounds}",
                  "flat": [round(x, 4) for x in got[True]],
                  "foreach": [round(x, 4) for x in got[False]],
                  "load1": [min(loads), max(loads)]}))
