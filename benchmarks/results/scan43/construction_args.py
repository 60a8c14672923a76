"""Dump the (texts, names) of the scan's construction_sites call to /tmp/s43_constr_args.pkl (for
construction_sites_same.py): cd /tmp && PYTHONPATH=TREE python3 construction_args.py"""
import time, pickle
import derivgraph.audit.static.scan as S
import derivgraph.audit.static.construction as C
cap = {}
orig = C.construction_sites
def wrapped(texts, names, jobs=None):
    cap["args"] = (list(texts), set(names))
    return orig(texts, names, jobs)
C.construction_sites = wrapped
S.scan(package="vllm", jobs=1)
texts, names = cap["args"]
print(len(texts), len(names), sorted(names)[:20])
for jobs in (1, 2, 1, 2):
    c = time.process_time(); w = time.perf_counter()
    r = orig(texts, names, jobs)
    import resource
    print(jobs, "parent cpu", round(time.process_time() - c, 3), "wall", round(time.perf_counter() - w, 3), "children", resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime)
pickle.dump(cap["args"], open("/tmp/s43_constr_args.pkl", "wb"))
