import cProfile, pstats, sys, time
import derivgraph.audit.static.scan as S
pr = cProfile.Profile()
t=time.process_time()
pr.enable()
r = S.scan(package="vllm", jobs=1)
pr.disable()
print("cpu", time.process_time()-t, len(r.findings))
pr.dump_stats("/tmp/scan36_j1.prof")
