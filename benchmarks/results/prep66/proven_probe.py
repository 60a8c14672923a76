"""Synthetic replica of Stamper.proven's dict upkeep at 100k (one run of 24999 proven rows):
_prove's update, _replay_run's lookups and checks, and its deletes. usage: python proven_probe.py"""
import time, statistics, gc
from itertools import repeat
from collections import deque
from operator import is_, is_not, itemgetter
n=24999
rows=list(range(1,n+1)); prow=list(range(n))
T=object(); P=object()
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
def tm(f, k=15):
    r=[]
    for _ in range(k):
        a=time.perf_counter(); f(); r.append(time.perf_counter()-a)
    return round(statistics.median(r)*1e3,2)
gc.disable()
def full():
    proven={}
    proven.update(zip(map(rows.__getitem__, prow), zip(repeat(T), repeat(P), range(len(prow)))))
    rr=range(1, n+1)
    proofs=list(map(proven.get, rr))
    ok = all(map(is_not, proofs, repeat(None))) and all(map(is_, map(_FIRST, proofs), repeat(T))) and all(map(is_, map(_SECOND, proofs), repeat(proofs[0][1])))
    idx=[p[2] for p in proofs]
    deque(map(proven.__delitem__, rr), maxlen=0)
print("dict path total ms", tm(full))
