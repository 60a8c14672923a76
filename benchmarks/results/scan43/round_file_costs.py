import time, sys, collections
import derivgraph.audit.static.scan as S
orig = S._audit_one
rows = []
def wrapped(src, text, context, index, extra=()):
    c = time.process_time()
    r = orig(src, text, context, index, extra)
    rows.append((time.process_time() - c, src.display, bool(extra), len(r[0]), len(r[1]), len(r[2]), r[3] is not None))
    return r
S._audit_one = wrapped
c = time.process_time()
rep = S.scan(package="vllm", jobs=1)
print("total", time.process_time() - c, len(rep.findings))
r1 = [r for r in rows if not r[2]]
print("round1 files", len(r1), "cpu", sum(r[0] for r in r1))
empty = [r for r in r1 if r[3] == 0 and r[4] == 0 and r[5] == 0]
print("round1 empty (no sites, no externals, no reach)", len(empty), "cpu", sum(r[0] for r in empty))
nosite = [r for r in r1 if r[3] == 0]
print("round1 no sites", len(nosite), "cpu", sum(r[0] for r in nosite))
rn = [r for r in rows if r[2]]
print("later rounds", len(rn), "cpu", sum(r[0] for r in rn), "empty", sum(1 for r in rn if r[3]==0 and r[4]==0), sum(r[0] for r in rn if r[3]==0 and r[4]==0))
for r in sorted(rows, reverse=True)[:25]:
    print(r)
