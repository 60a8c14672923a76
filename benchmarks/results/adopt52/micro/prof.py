"""cProfile one warm stamped compile at a size; print functions under the named phases."""
import cProfile, gc, pstats, sys
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect()
pr = cProfile.Profile()
pr.enable()
plan = compile_plan(model, [spec])
pr.disable()
st = pstats.Stats(pr)
st.sort_stats("cumulative").print_stats(70)
for name in sys.argv[2:]:
    st.print_callees(name)
