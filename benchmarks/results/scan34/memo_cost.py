"""Serial (jobs=1): own CPU of each ReaderIndex.memo table (its make() less nested memos),
grouped by key kind; these tables are per process, so under forked workers each worker that
needs one builds it again. PYTHONPATH=<tree> python3 memo_cost.py"""
import re
import time
from collections import defaultdict

import derivgraph.audit.static.readers as R
import derivgraph.audit.static.scan as S

own = defaultdict(float)
n = defaultdict(int)
stack = []
_memo = R.ReaderIndex.memo


def memo(self, key, make):
    if key in self._memo:
        return self._memo[key]
    kind = re.sub(r"[ :].*", "", key) if not key.startswith(("computed-after-load", "handed"))\
        else key.split(":")[0]
    kind = " ".join(key.split(" ")[:2]) if kind in ("bound", "module", "field", "init",
                                                    "backend", "failing", "requested",
                                                    "default", "construction") else kind
    stack.append(0.0)
    s = time.process_time()
    try:
        return _memo(self, key, make)
    finally:
        d = time.process_time() - s
        inner = stack.pop()
        own[kind] += d - inner
        n[kind] += 1
        if stack:
            stack[-1] += d


R.ReaderIndex.memo = memo
t = time.process_time()
S.scan(package="vllm", jobs=1)
print(f"scan CPU {time.process_time() - t:.2f} s; memo tables, own CPU (s), count:")
for k, v in sorted(own.items(), key=lambda kv: -kv[1])[:20]:
    print(f"  {k:28s} {v:6.2f} {n[k]:5d}")
print(f"  total {sum(own.values()):.2f}")
