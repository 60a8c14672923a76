"""Minor page faults and CPU time of one warm compile at 100k (the collector off, as compile_plan runs)."""
import resource, sys, time, gc, os
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
for i in range(2):
    m = scaling_model(25000); gc.collect()
    r0 = resource.getrusage(resource.RUSAGE_SELF); t = time.process_time()
    plan = compile_plan(m, [spec])
    t = time.process_time() - t; r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{sys.argv[1]} cpu {t:.3f} s minflt {r1.ru_minflt - r0.ru_minflt} load {os.getloadavg()[0]:.2f}")
    del plan, m
