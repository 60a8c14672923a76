"""In-process: time _evaluate_all (and its two halves) on one stamped graph, repeated."""
import gc, statistics, sys, time
import torch
import derivgraph.planner as planner
from derivgraph.column_layout import ColumnLayouts
from derivgraph.compiler.columns import evaluate_columns
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from stamped_plan import evaluation_inputs  # noqa: E402
n = int(sys.argv[1]); reps = int(sys.argv[2])
graph, sources = evaluation_inputs(n)
orig = planner._evaluate_all
gc.disable()
t_all, t_cols, t_run = [], [], []
for _ in range(reps):
    t0 = time.process_time(); orig(graph, dict(sources), ColumnLayouts()); t_all.append(time.process_time() - t0)
    interp = planner.CompileValues(graph, dict(sources))
    with torch.no_grad():
        t0 = time.process_time(); evaluate_columns(graph, interp.env, interp.source_at, ColumnLayouts()); t1 = time.process_time()
        interp.run(graph.ordered()); t2 = time.process_time()
    t_cols.append(t1 - t0); t_run.append(t2 - t1)
    gc.collect()
print(f"all {statistics.median(t_all):.4f} cols {statistics.median(t_cols):.4f} run {statistics.median(t_run):.4f}")
