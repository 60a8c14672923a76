"""Per phase: wall, parent CPU, forked children CPU (user+sys), for a given jobs.
PYTHONPATH=<tree> python3 benchmarks/results/scan34/phases.py JOBS"""
import resource
import sys
import time

import derivgraph.audit.static.scan as S

jobs = int(sys.argv[1])
rows = []
count = {}


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def wrap(name):
    f = getattr(S, name)

    def w(*a, **k):
        count[name] = count.get(name, 0) + 1
        s, c, ch = time.perf_counter(), cpu_self(), cpu_children()
        try:
            return f(*a, **k)
        finally:
            rows.append((f"{name}#{count[name]}", time.perf_counter() - s, cpu_self() - c,
                         cpu_children() - ch))
    setattr(S, name, w)


for n in ["tree_facts", "_run", "_mark_built_once", "apply_evidence"]:
    wrap(n)
s, c, ch = time.perf_counter(), cpu_self(), cpu_children()
r = S.scan(package="vllm", jobs=jobs)
print(f"jobs={jobs} findings={len(r.findings)} wall={time.perf_counter() - s:.2f} "
      f"self={cpu_self() - c:.2f} children={cpu_children() - ch:.2f}")
for name, wl, sc, cc in rows:
    print(f"  {name:20s} wall={wl:5.2f} self={sc:5.2f} children={cc:5.2f} total={sc + cc:5.2f}")
