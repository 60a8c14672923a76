# ruff: noqa
"""scan32 exploration instrument (one run, serial --jobs 1 scan of vLLM 0.33.0): see BENCHMARKS.md, scan32.
On the base (git archive of ba2b206): PYTHONPATH=/tmp/base_scan32 python3 benchmarks/results/scan32/explore/recomp.py > benchmarks/results/scan32/explore/recomp.txt"""
import re, collections, time, sys
import re._compiler as rc
C = collections.Counter(); T = collections.Counter(); W = collections.Counter()
oc = rc.compile
def comp(p, flags=0):
    t = time.perf_counter(); r = oc(p, flags); dt = time.perf_counter() - t
    key = (p if isinstance(p, str) else repr(p), flags); C[key] += 1; T[key] += dt
    f = sys._getframe(2); W[(f.f_code.co_filename.rsplit("/",1)[-1], f.f_lineno)] += dt
    return r
rc.compile = comp
from derivgraph.audit.static.scan import scan
t0 = time.perf_counter()
scan(package="vllm", jobs=1)
print("compiles", sum(C.values()), "distinct", len(C), "time %.3f" % sum(T.values()), "repeat-time %.3f" % sum(T[k]*(C[k]-1)/C[k] for k in C))
for k, v in W.most_common(25): print(k, "%.3f" % v)
for k, c in C.most_common(10): print(c, "%.3f" % T[k], k[0][:100])
