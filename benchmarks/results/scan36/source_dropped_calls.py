import collections, time, re
import derivgraph.audit.static.platforms as P
import derivgraph.audit.static.evidence as E
calls = []; tt = [0.0]
orig = P.source_dropped
def w(derives_from, body, tree, at=None, *, allocates=None):
    t = time.perf_counter(); r = orig(derives_from, body, tree, at, allocates=allocates); tt[0] += time.perf_counter() - t
    calls.append((derives_from, r is not None and "emptied at" in r)); return r
E.source_dropped = w
import derivgraph.audit.static.scan as S
S.scan(package="vllm", jobs=1)
print(len(calls), "time", round(tt[0], 3)); print(collections.Counter(calls).most_common())
