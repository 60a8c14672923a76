"""The fixed cost of one forked phase (two workers, a trivial work function) at the scan's
memory state after the rounds: parent and workers' CPU and faults, REPS times.
    cd /tmp && PYTHONPATH=TREE python3 fork_cost.py [REPS]"""
import resource
import sys
import time

import derivgraph.audit.static.scan as S
from derivgraph.audit.static.forked import forked_chunks

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
orig = S._mark_built_once


def probe(*a, **k):
    for _ in range(reps):
        s0, c0, t0 = (resource.getrusage(resource.RUSAGE_SELF),
                      resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter())
        n = sum(len(r) for _, r in forked_chunks(lambda ks: ks, 64, 2, 8))
        s1, c1, t1 = (resource.getrusage(resource.RUSAGE_SELF),
                      resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter())
        print(f"n={n} wall={t1 - t0:.3f} parent={s1.ru_utime + s1.ru_stime - s0.ru_utime - s0.ru_stime:.3f}"
              f" workers={c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime:.3f}"
              f" (user {c1.ru_utime - c0.ru_utime:.3f} sys {c1.ru_stime - c0.ru_stime:.3f})"
              f" wflt={c1.ru_minflt - c0.ru_minflt} maxrss={s1.ru_maxrss // 1024}MB")
    return orig(*a, **k)


S._mark_built_once = probe
S.scan(package="vllm")
