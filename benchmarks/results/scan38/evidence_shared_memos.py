"""Which of the reader index's memo tables (ReaderIndex.memo) both evidence workers build:
each worker logs the keys it computes and the CPU each took; keys built in both, by cost.
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/evidence_shared_memos.py"""
import collections
import os
import time

import derivgraph.audit.static.readers as R
import derivgraph.audit.static.scan as S

LOG = f"/tmp/memos_{os.getpid()}.txt"
orig = R.ReaderIndex.memo
depth = [0]


def memo(self, key, make):
    if key in self._memo:
        return self._memo[key]
    depth[0] += 1
    c = time.process_time()
    try:
        return orig(self, key, make)
    finally:
        depth[0] -= 1
        with open(LOG, "a") as fh:  # nested memos: the outermost's time includes the inner
            fh.write(f"{os.getpid()}\t{depth[0]}\t{time.process_time() - c:.5f}\t{key[:120]!r}\n")


R.ReaderIndex.memo = memo
S.scan(package="vllm")
rows = [line.rstrip("\n").split("\t") for line in open(LOG)]
os.remove(LOG)
by_pid = collections.defaultdict(dict)
for pid, d, t, key in rows:
    by_pid[pid][key] = (float(t), int(d))
pids = [p for p in by_pid if p != str(os.getpid())]
print("processes", {p: len(v) for p, v in by_pid.items()}, "parent", os.getpid())
if len(pids) >= 2:
    a, b = (by_pid[p] for p in pids[-2:])
    both = set(a) & set(b)
    top = [k for k in both if a[k][1] == 0]
    print("keys built in both", len(both), "outermost", len(top),
          "their cpu (max of the two)", round(sum(max(a[k][0], b[k][0]) for k in top), 3))
    for k in sorted(top, key=lambda k: -max(a[k][0], b[k][0]))[:25]:
        print(f"{a[k][0]:.3f} {b[k][0]:.3f} {k}")
