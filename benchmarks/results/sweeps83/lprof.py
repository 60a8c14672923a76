"""line_profiler of named functions (module:qualname) over one warm compile at argv[1]."""
import gc
import importlib
import sys

try:
    from line_profiler import LineProfiler  # the `profile` extra
except ImportError as exc:
    raise SystemExit("needs line-profiler: pip install -e '.[profile]'") from exc

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1])
lp = LineProfiler()
for s in sys.argv[2:]:
    mod, _, qual = s.partition(":")
    owner = importlib.import_module(mod)
    for p in qual.split("."):
        owner = getattr(owner, p)
    lp.add_function(owner)
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
lp.enable(); plan = compile_plan(model, [spec]); lp.disable()
lp.print_stats(output_unit=1e-3, stripzeros=True)
