"""Parent-side serial costs of one in-process scan (forked workers), no profiler."""
import gc, sys, time, resource
t0 = time.perf_counter()
import derivgraph.audit.static.scan as S
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.readers as R
import derivgraph.audit.static.handed_reader as H
print("import", round(time.perf_counter() - t0, 3))
times = {}
def wrap(mod, name):
    f = getattr(mod, name)
    def w(*a, **k):
        s = time.perf_counter(); c = time.process_time()
        r = f(*a, **k)
        times.setdefault(name, []).append((round(time.perf_counter() - s, 3), round(time.process_time() - c, 3)))
        return r
    setattr(mod, name, w)
for n in ["collect_files", "_context", "tree_facts", "_mark_built_once", "apply_evidence", "default_specs", "_read"][:6]:
    wrap(S, n)
for n in ["kept_handoffs", "ReaderIndex", "handed_tree", "reset_flags"]:
    wrap(E, n)
gcs = []
def cb(phase, info):
    if phase == "start": cb.t = time.perf_counter()
    else: gcs.append((info["generation"], round(time.perf_counter() - cb.t, 3)))
gc.callbacks.append(cb)
s = time.perf_counter(); c = time.process_time()
r = S.scan(package="vllm")
print("scan wall", round(time.perf_counter() - s, 2), "parent cpu", round(time.process_time() - c, 2),
      "children", round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime, 2), len(r.findings))
s = time.perf_counter()
from derivgraph.audit.static.report import render_json
txt = render_json(r)
print("render", round(time.perf_counter() - s, 3))
for k, v in times.items(): print(k, v)
big = [g for g in gcs if g[1] > 0.005]
print("gc collections", len(gcs), "sum", round(sum(g[1] for g in gcs), 3), "big", big)
