"""One in-process vLLM scan with each forked phase's timeline: per phase, when the pool
started, each worker's busy time, its first start and last end, and the phase's end.
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/worker_timeline.py [--jobs N]"""
import contextlib, os, sys, time, resource
import derivgraph.audit.static.forked as F
import derivgraph.audit.static.scan as S

LOG = f"/tmp/timeline_{os.getpid()}.txt"
phase = [0]
starts = {}
orig_call = F._call
orig_frozen = F.frozen_for_fork

def _call(chunk):
    t0 = time.perf_counter(); c0 = time.process_time()
    r = orig_call(chunk)
    with open(LOG, "a") as fh:
        fh.write(f"{phase[0]} {os.getpid()} {t0:.4f} {time.perf_counter():.4f} {len(chunk)} {time.process_time() - c0:.4f}\n")
    return r
_call.__qualname__ = _call.__name__ = "_call"; _call.__module__ = F.__name__
F._call = _call

@contextlib.contextmanager
def frozen():
    phase[0] += 1
    starts[phase[0]] = time.perf_counter()
    c0 = time.process_time()
    with orig_frozen():
        yield
    starts[phase[0], "end"] = time.perf_counter()
    starts[phase[0], "cpu"] = time.process_time() - c0
F.frozen_for_fork = frozen

jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else None
s = time.perf_counter(); c = time.process_time()
r = S.scan(package="vllm", jobs=jobs)
parent_cpu = time.process_time() - c
print("scan wall", round(time.perf_counter() - s, 2), "parent cpu", round(parent_cpu, 2),
      "children", round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime, 2), len(r.findings))
rows = [l.split() for l in open(LOG)] if os.path.exists(LOG) else []
crit = []
for p in sorted(k for k in starts if isinstance(k, int)):
    t0 = starts[p]; t1 = starts[p, "end"]
    mine = [(int(pid), float(a), float(b), int(n), float(c)) for q, pid, a, b, n, c in rows if int(q) == p]
    pids = sorted({m[0] for m in mine})
    per = []
    for pid in pids:
        ms = [m for m in mine if m[0] == pid]
        per.append(f"pid..{pid % 1000}: chunks={len(ms)} items={sum(m[3] for m in ms)} busy={sum(m[2]-m[1] for m in ms):.2f} cpu={sum(m[4] for m in ms):.2f} "
                   f"first={min(m[1] for m in ms)-t0:.2f} last={max(m[2] for m in ms)-t0:.2f}")
    pc = starts[p, "cpu"]
    worst = max([pc] + [sum(m[4] for m in mine if m[0] == pid) for pid in pids])
    crit.append((pc, worst))
    print(f"phase {p} (since scan start {t0 - s:.2f}): wall {t1 - t0:.2f} parent cpu {pc:.2f}; " + "; ".join(per))
outside = parent_cpu - sum(pc for pc, _ in crit)
print(f"critical path cpu {outside + sum(w for _, w in crit):.2f} (parent outside phases {outside:.2f}, "
      f"phases' busiest process {sum(w for _, w in crit):.2f})")
os.path.exists(LOG) and os.remove(LOG)
