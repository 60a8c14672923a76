"""Wall and CPU per phase of one cold CLI scan (default jobs); the CPU counts reaped workers.

    python3 benchmarks/results/scan28/phases.py            # this tree (or PYTHONPATH=<base>)
"""
import functools
import resource
import sys
import time

T0 = time.perf_counter()
T: dict = {}


def cpu() -> float:
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def wrap(mod, name):
    f = getattr(mod, name, None)
    if f is None:
        return

    @functools.wraps(f)
    def g(*a, **k):
        t, c = time.perf_counter(), cpu()
        r = f(*a, **k)
        T.setdefault(name, []).append((time.perf_counter() - t, cpu() - c))
        return r
    setattr(mod, name, g)


import derivgraph.audit.static.scan as S  # noqa: E402
from derivgraph.cli import main  # noqa: E402

T["import"] = [(time.perf_counter() - T0, cpu())]
for n in ["collect_files", "default_specs", "tree_facts", "_context", "_run", "_mark_built_once",
          "apply_evidence", "resolve_forwarded", "mirror_forwarded", "_is_candidate",
          "scan_files"]:
    wrap(S, n)
sys.argv = ["derivgraph", "audit", "static", "--package", "vllm", "--format", "json", "-o",
            "/dev/null"] + sys.argv[1:]
try:
    main()
except SystemExit:
    pass
for k, v in T.items():
    print(f"{k:18s} wall {sum(w for w, _ in v):6.2f} cpu {sum(c for _, c in v):6.2f}"
          f"  {[round(w, 2) for w, _ in v] if 1 < len(v) < 10 else len(v)}", file=sys.stderr)
print(f"{'whole process':18s} wall {time.perf_counter() - T0:6.2f} cpu {cpu():6.2f}",
      file=sys.stderr)
