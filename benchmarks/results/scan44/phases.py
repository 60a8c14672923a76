"""Per phase of one in-process vLLM scan (default jobs unless --jobs N): wall, the parent's
CPU and the forked workers' CPU (user+sys, reaped at each phase's end), and minor faults.
    cd /tmp && PYTHONPATH=TREE python3 phases.py [--jobs N]"""
import resource
import sys
import time

import derivgraph.audit.static.scan as S


def now():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter(), s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime,
            s.ru_minflt, c.ru_minflt)


rows = []


def timed(name, fn):
    def wrapper(*a, **k):
        t = now()
        try:
            return fn(*a, **k)
        finally:
            rows.append((name, [y - x for x, y in zip(t, now())]))
    return wrapper


if hasattr(S, "_Rounds"):  # scan44: the rounds' audits (and the pool's fork) in _Rounds.run
    S._Rounds.run = timed("_run", S._Rounds.run)
    S._Rounds.__exit__ = timed("rounds_exit", S._Rounds.__exit__)
for name in ("tree_facts", "_context", "_run", "_mark_built_once", "apply_evidence",
             "resolve_forwarded", "mark_reload_skipped", "skip_set"):
    if hasattr(S, name):
        setattr(S, name, timed(name, getattr(S, name)))
jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else None
t0 = now()
report = S.scan(package="vllm", jobs=jobs)
tot = [y - x for x, y in zip(t0, now())]
print(f"jobs={jobs} findings={len(report.findings)}")
print(f"{'phase':20s} {'wall':>6s} {'parent':>6s} {'workers':>7s} {'pflt':>7s} {'wflt':>7s}")
for name, d in rows + [("TOTAL", tot)]:
    print(f"{name:20s} {d[0]:6.2f} {d[1]:6.2f} {d[2]:7.2f} {d[3]:7d} {d[4]:7d}")
other = [t - sum(d[i] for _, d in rows) for i, t in enumerate(tot)]
print(f"{'(outside phases)':20s} {other[0]:6.2f} {other[1]:6.2f} {other[2]:7.2f}")
