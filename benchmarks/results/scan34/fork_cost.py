"""The fixed cost of a forked phase: with the scan's context in memory (texts, facts, tree
index), fork 2 workers (forked.forked_chunks) that do nothing per item, and report their CPU.
Then round 1's audits serially and forked, alternating.
PYTHONPATH=<tree> python3 benchmarks/results/scan34/fork_cost.py"""
import resource
import time

from _common import cpu, round_one_inputs

import derivgraph.audit.static.scan as S
from derivgraph.audit.static.forked import forked_chunks

texts, context, cands = round_one_inputs()
print("rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
      "candidates", len(cands))
for _rep in range(3):
    w = time.perf_counter()
    s0, c0 = cpu()
    for _chunk in forked_chunks(lambda ks: [None for _k in ks], len(cands), 2, 8):
        pass
    s1, c1 = cpu()
    print(f"empty forked phase: wall={time.perf_counter() - w:.2f} self={s1 - s0:.2f} "
          f"children={c1 - c0:.2f}")
for _rep in range(2):
    for jobs in (1, 2):
        w = time.perf_counter()
        s0, c0 = cpu()
        S._run([(i, ()) for i in cands], texts, context, jobs, None)
        s1, c1 = cpu()
        print(f"round1 jobs={jobs}: wall={time.perf_counter() - w:.2f} self={s1 - s0:.2f} "
              f"children={c1 - c0:.2f} total={s1 - s0 + c1 - c0:.2f}")
