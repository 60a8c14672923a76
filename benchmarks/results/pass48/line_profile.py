"""line_profiler of one stamped 100k compile (after a warm-up, GC off) over the lowering and
code generation functions of the tree on PYTHONPATH (those it has).

    PYTHONPATH=TREE python3 line_profile.py > out.txt

``line_profile_base_475f044.txt`` was made with the base's functions (``Lowerer.lower``,
``_columns_hold``, ``provable_layers``, ``build_program``, ``_emit_flat``, ``levels``,
``row_levels``, ``_layer_addresses``, ``row_keys``, ``BoundTensors.bind``);
``line_profile_6e58594.txt`` with the compact path's (the list below, less the ``Emitter``
methods).
"""

import gc

try:
    from line_profiler import LineProfiler
except ImportError as exc:  # the profile extra: pip install -e '.[profile]'
    raise SystemExit("this script needs line-profiler: pip install -e '.[profile]'") from exc

import derivgraph.compiler.codegen as cg
import derivgraph.compiler.lower as lower
import derivgraph.compiler.lower_layers as ll
import derivgraph.compiler.schedule as sc
import derivgraph.compiler.schedule_layers as sl
import derivgraph.planner as pl
import derivgraph.runtime.storage as st
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

NAMES = [(lower, "Lowerer.lower"), (lower, "_step_order"), (lower, "_rows_in_order"),
         (ll, "_columns_hold"), (ll, "provable_layers"), (cg, "build_program"),
         (cg, "_column_plan"), (cg, "_emit_columns"), (cg, "_emit_flat"), (sc, "levels"),
         (sc, "compact_levels"), (sl, "row_levels"), (sl, "layer_fence"),
         (sl, "_layer_addresses"), (sl, "_storage_proof"), (sl, "row_keys"),
         (sl, "same_key_facts"), (st, "BoundTensors.bind"), (pl, "_lower"),
         (pl, "_mismatches"), (lower, "LoweredSteps.written")]

lp = LineProfiler()
for module, name in NAMES:
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
    if obj is not None:
        lp.add_function(obj)
spec = scaling_spec()
compile_plan(scaling_model(250), [spec])
model = scaling_model(25000)
gc.collect()
gc.disable()
with stamping(True):
    lp.enable()
    plan = compile_plan(model, [spec])
    lp.disable()
lp.print_stats(stripzeros=True, output_unit=1e-3)
