"""cProfile of one warm compile_plan at --size (default 100000); prints top by tottime and cumtime."""
import cProfile, gc, pstats, sys
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
n = int(sys.argv[2]) if len(sys.argv) > 2 else 45
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
pr = cProfile.Profile(); pr.enable()
plan = compile_plan(model, [spec])
pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(n)
st.sort_stats("cumtime").print_stats(n)
