"""Line profile of the prepare-side builders in one warm 100k compile (argv: module:func ...)."""
import gc, sys
try:
    from line_profiler import LineProfiler  # the `profile` extra
except ImportError as exc:
    raise SystemExit("needs line-profiler: pip install -e '.[profile]'") from exc
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
import derivgraph.runtime.engine as engine, derivgraph.runtime.accessors as acc
import derivgraph.runtime.holders as holders, derivgraph.planner as planner
import derivgraph.runtime.entry_columns as ec
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
model = scaling_model(25000)
lp = LineProfiler()
for name in sys.argv[1:]:
    mod, _, fn = name.partition(":")
    obj = {"engine": engine, "acc": acc, "holders": holders, "planner": planner, "ec": ec, "watch": __import__("derivgraph.runtime.watch").runtime.watch}[mod]
    for part in fn.split("."):
        obj = getattr(obj, part)
    lp.add_function(obj)
gc.collect(); gc.disable()
lp.enable()
plan = compile_plan(model, [spec])
lp.disable()
lp.print_stats(output_unit=1e-3, stripzeros=True)
