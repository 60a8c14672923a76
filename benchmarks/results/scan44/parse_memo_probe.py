"""Probe (run at 1a2cdbc, before the change): the scan with jobs 1, segments' ast.parse memoised on (source, file name)
or not: CPU, reuses, and a digest of the findings.  cd /tmp && PYTHONPATH=TREE python3 parse_memo_probe.py memo|plain"""
import ast, sys, time, json, dataclasses
import derivgraph.audit.static.segments as G
import derivgraph.audit.static.scan as S
memo = {}
stats = [0, 0, 0.0]
real = ast.parse
class A:
    @staticmethod
    def parse(src, filename="<unknown>", *a, **k):
        key = (src, filename)
        got = memo.get(key)
        if got is not None:
            stats[0] += 1
            return got
        t = time.perf_counter()
        got = memo[key] = real(src, filename, *a, **k)
        stats[2] += time.perf_counter() - t
        stats[1] += 1
        return got
    def __getattr__(self, n): return getattr(ast, n)
class Mod:
    def __getattr__(self, n): return getattr(ast, n)
m = Mod(); m.parse = A.parse
if sys.argv[1] == "memo":
    G.ast = m
t = time.process_time()
r = S.scan(package="vllm", jobs=1)
print(sys.argv[1], "cpu", round(time.process_time() - t, 2), "hits", stats[0], "misses", stats[1], "parse s", round(stats[2], 2))
from derivgraph.audit.static.report import *  # noqa
import hashlib
print(hashlib.md5(repr([dataclasses.astuple(f) for f in r.findings]).encode()).hexdigest())
