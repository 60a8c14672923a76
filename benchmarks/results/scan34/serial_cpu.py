"""CPU of one serial (jobs=1) scan in process: PYTHONPATH=<tree> python3 serial_cpu.py [jobs]"""
import resource
import sys
import time

import derivgraph.audit.static.scan as S

jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
w, c = time.perf_counter(), time.process_time()
r = S.scan(package="vllm", jobs=jobs)
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"jobs={jobs} findings={len(r.findings)} wall={time.perf_counter() - w:.2f} "
      f"self_cpu={time.process_time() - c:.2f} children_cpu={ch.ru_utime + ch.ru_stime:.2f} "
      f"maxrss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}")
