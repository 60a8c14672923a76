# ruff: noqa
"""scan32 exploration instrument (one run, serial --jobs 1 scan of vLLM 0.33.0): see BENCHMARKS.md, scan32.
On the base (git archive of ba2b206): PYTHONPATH=/tmp/base_scan32 python3 benchmarks/results/scan32/explore/segparse.py > benchmarks/results/scan32/explore/segparse.txt"""
import ast, time, sys, collections
import derivgraph.audit.static.segments as seg
import derivgraph.audit.static.module as mod
from derivgraph.audit.static.scan import scan
T = collections.Counter(); N = collections.Counter()
seen = collections.Counter()
files = collections.Counter()
class P:
    def __getattr__(self, n): return getattr(ast, n)
    def parse(self, src, filename="<unknown>", *a, **k):
        f = sys._getframe(1)
        block = f.f_locals.get("block")
        keep = f.f_locals.get("keep")
        t = time.perf_counter(); r = ast.parse(src, filename, *a, **k); dt = time.perf_counter() - t
        kind = block.kind if block else "?"
        key = (filename, block.start if block else -1, hash(src))
        dup = seen[key] > 0
        seen[key] += 1
        T[(kind, dup)] += dt; N[(kind, dup)] += 1
        return r
seg.ast = P()
orig = mod.audit_module
def am(text, filename, *a, **k):
    files[filename] += 1
    return orig(text, filename, *a, **k)
mod.audit_module = am
import derivgraph.audit.static.scan as sc
sc.audit_module = am
scan(package="vllm", jobs=1)
for k in sorted(T): print(k, N[k], f"{T[k]:.3f}")
print("audits", sum(files.values()), "files", len(files), collections.Counter(files.values()).most_common(8))
