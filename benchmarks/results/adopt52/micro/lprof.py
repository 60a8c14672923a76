"""line_profiler of named compile functions over one warm stamped compile."""
import gc, sys
try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc
import derivgraph.planner as planner
import derivgraph.adoption as adoption
import derivgraph.adoption_columns as adoption_columns
import derivgraph.compiler.transaction as transaction
import derivgraph.compiler.columns as columns
import derivgraph.compiler.lower as lower
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1])
spec = scaling_spec()
planner.compile_plan(scaling_model(size // 4), [spec])
lp = LineProfiler()
targets = {"run": planner.CompileValues.run, "_evaluate_all": planner._evaluate_all,
           "adopt": adoption.adopt_or_allocate, "allocated_rows": adoption_columns.allocated_rows,
           "alias_rows": adoption_columns.alias_rows,
           "txn": transaction.ModelTransaction.__init__, "on_the_way": transaction.on_the_way,
           "evaluate_columns": columns.evaluate_columns, "_column": columns._column,
           "_operands": columns._operands, "_mismatches": planner._mismatches,
           "_bits_equal_all": planner._bits_equal_all, "_compile": planner._compile,
           "_lower": planner._lower, "lower_steps": lower.lower_steps, "hold": __import__("derivgraph.compiler.lower_layers", fromlist=["x"])._columns_hold, "prov": __import__("derivgraph.compiler.lower_layers", fromlist=["x"]).provable_layers, "lower": lower.Lowerer.lower}
for name in sys.argv[2:]:
    lp.add_function(targets[name])
model = scaling_model(size // 4)
gc.collect()
lp.enable()
planner.compile_plan(model, [spec])
lp.disable()
lp.print_stats(output_unit=1e-3, stripzeros=True)
