import sys, time, functools, logging
import derivgraph.audit.static.scan as S
T = {}
import resource
def cpu():
    a = resource.getrusage(resource.RUSAGE_SELF); b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
def wrap(mod, name):
    f = getattr(mod, name)
    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter(); c = cpu(); r = f(*a, **k)
        T.setdefault(name, []).append((round(time.perf_counter() - t, 2), round(cpu() - c, 2))); return r
    setattr(mod, name, g)
for n in ["_context", "_run", "apply_evidence", "_mark_built_once", "_is_candidate"]:
    wrap(S, n)
from derivgraph.cli import main
t0 = time.perf_counter()
sys.argv = ["derivgraph", "audit", "static", "--package", "vllm", "--format", "json", "-o", "/dev/null"] + sys.argv[1:]
try: main()
except SystemExit: pass
print("total", round(time.perf_counter() - t0, 2), file=sys.stderr)
for k, v in T.items():
    print(k, "wall", round(sum(w for w, _ in v), 2), "cpu", round(sum(c for _, c in v), 2), v if len(v) < 10 else len(v), file=sys.stderr)
print("cpu total", round(cpu(), 2), file=sys.stderr)
