import time, collections, sys, resource
def cpu():
    a=resource.getrusage(resource.RUSAGE_SELF); b=resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime+a.ru_stime+b.ru_utime+b.ru_stime
import derivgraph.audit.static.scan as sc
T = collections.Counter()
def timed(mod, name):
    f = getattr(mod, name)
    def w(*a, **k):
        t = cpu(); r = f(*a, **k); T[name] += cpu() - t; return r
    setattr(mod, name, w)
for n in ["tree_facts", "_context", "_run", "apply_evidence", "resolve_forwarded", "_mark_built_once", "mark_reload_skipped", "skip_set", "mirror_forwarded", "SpecIndex", "_read", "_is_candidate"]:
    timed(sc, n)
import derivgraph; print("derivgraph from", derivgraph.__file__)
jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
t = cpu(); w = time.perf_counter()
r = sc.scan(package="vllm", jobs=jobs)
print(f"total cpu {cpu()-t:.2f} wall {time.perf_counter()-w:.2f} findings {len(r.findings)}")
for k, v in T.most_common(): print(f"  {k} {v:.2f}")
