# Per-worker gc.collect CPU of one in-process scan (monkeypatched gc in scan.py), plain and with
# gc.freeze() around each forked phase (argument 1): PYTHONPATH=TREE python3 gc_first_collect.py [1]
# Writes /tmp/s37/gclog.PID per process.
import gc, os, sys, time, resource
import derivgraph.audit.static.scan as S
import derivgraph.audit.static.forked as F
FREEZE = len(sys.argv) > 1
orig_gc_collect = gc.collect
log = {}
class G:
    def __getattr__(self, n): return getattr(gc, n)
    def collect(self, *a):
        t = time.process_time(); r = orig_gc_collect(*a); d = time.process_time() - t
        pid = os.getpid(); s = log.setdefault(pid, [0, 0.0, 0.0])
        s[0] += 1; s[1] += d; s[2] = max(s[2], d)
        with open(f"/tmp/s37/gclog.{pid}", "w") as fh: fh.write(repr(s))
        return r
S.gc = G()
if FREEZE:
    orig = F.forked_chunks
    def fc(*a, **k):
        gc.freeze()
        try:
            yield from orig(*a, **k)
        finally:
            gc.unfreeze()
    F.forked_chunks = fc; S.forked_chunks = fc
    import derivgraph.audit.static.tree_facts as T, derivgraph.audit.static.evidence as E
    T.forked_chunks = fc; E.forked_chunks = fc
os.system("rm -f /tmp/s37/gclog.*")
t = time.process_time(); w = time.perf_counter()
r = S.scan(package="vllm")
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("freeze" if FREEZE else "plain", "wall", round(time.perf_counter() - w, 2), "parent", round(time.process_time() - t, 2), "children user+sys", round(ru.ru_utime + ru.ru_stime, 2), "sys", round(ru.ru_stime, 2), len(r.findings))
import glob
tot = [0, 0.0]
for f in sorted(glob.glob("/tmp/s37/gclog.*")):
    s = eval(open(f).read()); tot[0] += s[0]; tot[1] += s[1]; print(f, [round(x, 3) if isinstance(x, float) else x for x in s])
print("gc total", tot)
