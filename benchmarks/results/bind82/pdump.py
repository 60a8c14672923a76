import cProfile, gc, sys
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]); spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
pr = cProfile.Profile(); pr.enable()
plan = compile_plan(model, [spec])
pr.disable(); pr.dump_stats(sys.argv[2])
