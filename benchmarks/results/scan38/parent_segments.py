"""The parent's serial pieces of one in-process scan (default jobs), each wrapped: wall and CPU.
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/parent_segments.py"""
import time, resource
t0 = time.perf_counter()
import derivgraph.audit.static.scan as S
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.readers as R
import derivgraph.audit.static.tree_facts as T
import derivgraph.audit.static.forked as F
print("import", round(time.perf_counter() - t0, 3))
times = {}
def wrap(mod, name, label=None):
    f = getattr(mod, name)
    def w(*a, **k):
        s = time.perf_counter(); c = time.process_time()
        r = f(*a, **k)
        times.setdefault(label or name, []).append((round(time.perf_counter() - s, 3), round(time.process_time() - c, 3)))
        return r
    setattr(mod, name, w)
for n in ["collect_files", "_read", "tree_facts", "_context", "_run", "resolve_forwarded", "_mark_built_once",
          "mark_reload_skipped", "skip_set", "_finding", "apply_evidence", "mirror_forwarded", "SpecIndex"]:
    wrap(S, n)
for n in ["kept_handoffs", "ReaderIndex", "handed_tree", "reset_flags", "_judge_all"]:
    wrap(E, n)
for n in ["_word_files", "prefetch"]:
    wrap(R.ReaderIndex, n)
s = time.perf_counter(); c = time.process_time()
r = S.scan(package="vllm")
print("scan wall", round(time.perf_counter() - s, 2), "parent cpu", round(time.process_time() - c, 2),
      "children", round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime, 2), len(r.findings))
for k, v in times.items():
    if len(v) > 8:
        print(k, "calls", len(v), "wall", round(sum(x[0] for x in v), 3), "cpu", round(sum(x[1] for x in v), 3))
    else:
        print(k, v)
