# ruff: noqa
"""scan32 exploration instrument (one run, serial --jobs 1 scan of vLLM 0.33.0): see BENCHMARKS.md, scan32.
On the base (git archive of ba2b206): PYTHONPATH=/tmp/base_scan32 python3 benchmarks/results/scan32/explore/reparse.py > benchmarks/results/scan32/explore/reparse.txt"""
import ast, time, sys, collections
import derivgraph.audit.static.segments as seg
from derivgraph.audit.static.scan import scan
T = collections.Counter(); N = collections.Counter(); CH = collections.Counter()
class P:
    def __getattr__(self, n): return getattr(ast, n)
    def parse(self, src, filename="<unknown>", *a, **k):
        f = sys._getframe(2)  # parse_relevant frame
        parsed = f.f_locals.get("parsed")
        block = sys._getframe(1).f_locals.get("block")
        again = block.start in parsed
        t = time.perf_counter(); r = ast.parse(src, filename, *a, **k); dt = time.perf_counter() - t
        key = (block.kind, again)
        T[key] += dt; N[key] += 1; CH[key] += len(src) - src.count("\n")
        return r
seg.ast = P()
scan(package="vllm", jobs=1)
for k in sorted(T): print(k, N[k], "%.3f" % T[k], CH[k])
