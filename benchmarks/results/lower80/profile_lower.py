import cProfile, gc, pstats, sys
import derivgraph.planner as P
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
model = scaling_model(25000)
orig = P._lower
pr = cProfile.Profile()
def wrapped(*a, **k):
    pr.enable()
    try: return orig(*a, **k)
    finally: pr.disable()
P._lower = wrapped
gc.collect(); gc.disable()
plan = compile_plan(model, [spec])
ps = pstats.Stats(pr)
ps.sort_stats("tottime")
[ps.print_callers(x) for x in sys.argv[1:]] if sys.argv[1:] else ps.print_stats(45)
