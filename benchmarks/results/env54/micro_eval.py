"""In-process micro A/B of ``planner._evaluate_all`` (env54): one stamped graph of the scaling
workload, evaluated ``reps`` times; process s, median and min (a third argument ``plain``:
the graph built with stamping off). Run on each tree in turn:

    for i in 1 2 3; do for t in BASE MINE; do
      PYTHONPATH=$t python benchmarks/results/env54/micro_eval.py 100000 9; done; done
"""
import gc
import statistics
import sys
import time
from pathlib import Path

import derivgraph.planner as planner
from derivgraph.column_layout import ColumnLayouts

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import stamped_plan  # noqa: E402
from stamped_plan import evaluation_inputs  # noqa: E402

n, reps = int(sys.argv[1]), int(sys.argv[2])
if sys.argv[3:] == ["plain"]:
    real = stamped_plan.stamping
    stamped_plan.stamping = lambda on: real(False)
graph, sources = evaluation_inputs(n)
gc.disable()
times = []
for _ in range(reps):
    t0 = time.process_time()
    planner._evaluate_all(graph, dict(sources), ColumnLayouts())
    times.append(time.process_time() - t0)
    gc.collect()
tree = Path(planner.__file__).resolve().parent.parent
arm = " ".join(sys.argv[3:])
print(f"{tree} {arm} evaluate median {statistics.median(times):.4f} "  # noqa: T201
      f"min {min(times):.4f}")
