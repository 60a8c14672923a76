"""cProfile of scan(package="vllm", jobs=1) in process: python3 profile_j1.py OUT.prof"""
import cProfile
import sys
import time

import derivgraph.audit.static.scan as S

pr = cProfile.Profile()
t = time.process_time()
pr.enable()
r = S.scan(package="vllm", jobs=1)
pr.disable()
print("cpu", time.process_time() - t, len(r.findings))
pr.dump_stats(sys.argv[1])
