"""Serial (jobs=1): CPU of each audit round, split into audits of a file an earlier round
already audited (what a worker keeping its files' trees and scopes could at most shorten)
and audits of files new to the round; with the parse time inside each.
PYTHONPATH=<tree> python3 benchmarks/results/scan34/reaudit_share.py"""
import ast
import time
from collections import defaultdict

import derivgraph.audit.static.scan as S

rnd = [0]
seen: set[int] = set()
now: set[int] = set()
cpu = defaultdict(float)
parse = defaultdict(float)
n = defaultdict(int)
cur = [None]
_parse = ast.parse


def timed_parse(*a, **k):
    s = time.process_time()
    try:
        return _parse(*a, **k)
    finally:
        if cur[0] is not None:
            parse[cur[0]] += time.process_time() - s


ast.parse = timed_parse
_run, _one = S._run, S._audit_one


def run(*a, **k):
    rnd[0] += 1
    try:
        return _run(*a, **k)
    finally:
        seen.update(now)
        now.clear()


def one(src, text, context, index, extra=()):
    key = (min(rnd[0], 4), "again" if index in seen else "new")
    now.add(index)
    cur[0] = key
    s = time.process_time()
    try:
        return _one(src, text, context, index, extra)
    finally:
        cpu[key] += time.process_time() - s
        n[key] += 1
        cur[0] = None


S._run, S._audit_one = run, one
r = S.scan(package="vllm", jobs=1)
print(f"findings {len(r.findings)}; round (4 = 4 and later), files, audits, CPU s, parse s")
for key in sorted(cpu):
    print(f"round {key[0]} {key[1]:5s} audits={n[key]:4d} cpu={cpu[key]:5.2f} "
          f"parse={parse[key]:5.2f}")
