"""Is a forked worker's extra CPU the fork's or the concurrency's? Round 1's audits of vLLM,
alternating: in process; in ONE forked worker (nothing else running); in TWO forked workers
(forked.forked_chunks, as the scan does). PYTHONPATH=<tree> python3 fork_one.py [reps]"""
import concurrent.futures as cf
import gc
import multiprocessing
import resource
import sys
import time

import derivgraph.audit.static.forked as F
import derivgraph.audit.static.scan as S
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


def work(chunk):
    return [S._audit_one(*texts[cands[k]], context, cands[k]) for k in chunk]


def one_fork():
    F._STATE = work
    try:
        with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            chunks = [list(range(k, min(k + 8, len(cands)))) for k in range(0, len(cands), 8)]
            for fut in [pool.submit(F._call, c) for c in chunks]:
                fut.result()
    finally:
        F._STATE = None


def two_forks():
    for _ in F.forked_chunks(work, len(cands), 2, 8):
        pass


def in_process():
    work(list(range(len(cands))))


for rep in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2):
    for name, f in (("in-process", in_process), ("one fork", one_fork), ("two forks", two_forks)):
        load = open("/proc/loadavg").read().split()[0]
        w = time.perf_counter(); s0, c0 = cpu()
        f()
        s1, c1 = cpu()
        print(f"rep={rep} {name:10s} load={load} wall={time.perf_counter() - w:5.2f} "
              f"cpu={s1 - s0 + c1 - c0:5.2f} (self {s1 - s0:.2f}, children {c1 - c0:.2f})",
              flush=True)
