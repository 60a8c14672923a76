"""The fixed cost of a forked phase: with the scan's context in memory (texts, facts, tree
index), fork 2 workers (forked.forked_chunks) that do nothing per item, and report their CPU.
Then round 1's audits serially and forked, alternating.
PYTHONPATH=<tree> python3 benchmarks/results/scan34/fork_cost.py"""
import gc
import resource
import time

import derivgraph.audit.static.scan as S
from derivgraph.audit.static.forked import forked_chunks
from derivgraph.audit.static.sources import collect_files
from derivgraph.audit.static.tree_facts import tree_facts


def cpu():
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime, b.ru_utime + b.ru_stime


gc.disable()
files = collect_files((), "vllm")
texts = [(src, t) for src in files if (t := S._read(src)) is not None]
facts = tree_facts([(src.module, t) for src, t in texts], 2)
context = S._context(texts, facts)
cands = [i for i, (_, t) in enumerate(texts) if S._is_candidate(t, facts[i], context)]
del facts
print("rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "candidates", len(cands))
for rep in range(3):
    w = time.perf_counter(); s0, c0 = cpu()
    for _ in forked_chunks(lambda ks: [None for _ in ks], len(cands), 2, 8):
        pass
    s1, c1 = cpu()
    print(f"empty forked phase: wall={time.perf_counter() - w:.2f} self={s1 - s0:.2f} "
          f"children={c1 - c0:.2f}")
for rep in range(2):
    for jobs in (1, 2):
        w = time.perf_counter(); s0, c0 = cpu()
        S._run([(i, ()) for i in cands], texts, context, jobs, None)
        s1, c1 = cpu()
        print(f"round1 jobs={jobs}: wall={time.perf_counter() - w:.2f} self={s1 - s0:.2f} "
              f"children={c1 - c0:.2f} total={s1 - s0 + c1 - c0:.2f}")
