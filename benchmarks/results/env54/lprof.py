"""line_profiler of named compile functions over one warm stamped compile (env54).

    PYTHONPATH=TREE python benchmarks/results/env54/lprof.py 100000 NAME...
"""
import gc
import sys

try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc
import derivgraph.adoption as adoption
import derivgraph.adoption_columns as adoption_columns
import derivgraph.compiler.columns as columns
import derivgraph.compiler.transaction as transaction
import derivgraph.planner as planner
import derivgraph.runtime.entry_columns as ec
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
           "_operands": columns._operands, "_compile": planner._compile,
           "_record_startup": planner._record_startup,
           "col_record": ec.EntryColumn.record_startup,
           "alias_record": ec.AliasColumn.record_startup,
           "_prepare": planner._prepare, "_mismatches": planner._mismatches,
           "_bits_equal_all": planner._bits_equal_all}
for name in sys.argv[2:]:
    lp.add_function(targets[name])
model = scaling_model(size // 4)
gc.collect()
lp.enable()
planner.compile_plan(model, [spec])
lp.disable()
lp.print_stats(output_unit=1e-3, stripzeros=True)
