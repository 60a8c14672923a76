"""One in-process vLLM scan of the tree on PYTHONPATH: wall, this process's CPU (user+sys) and
its forked workers' CPU (user+sys), the import not counted. ``--jobs N`` as the CLI's.
    cd /tmp && PYTHONPATH=TREE python3 inprocess_cpu.py [--jobs N]"""
import resource
import sys
import time

import derivgraph.audit.static.scan as S


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else None
w, p, c = time.perf_counter(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
report = S.scan(package="vllm", jobs=jobs)
parent, children = cpu(resource.RUSAGE_SELF) - p, cpu(resource.RUSAGE_CHILDREN) - c
print(f"jobs={jobs} wall={time.perf_counter() - w:.2f} parent={parent:.2f} "
      f"workers={children:.2f} total={parent + children:.2f} findings={len(report.findings)}")
