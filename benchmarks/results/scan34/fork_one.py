"""Is a forked worker's extra CPU the fork's or the concurrency's? Round 1's audits of vLLM,
alternating: in process; in ONE forked worker (nothing else running); in TWO forked workers
(forked.forked_chunks, as the scan does). PYTHONPATH=<tree> python3 fork_one.py [reps]"""
import concurrent.futures as cf
import multiprocessing
import sys
import time

from _common import cpu, round_one_inputs

import derivgraph.audit.static.forked as F
import derivgraph.audit.static.scan as S

texts, context, cands = round_one_inputs()


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
        w = time.perf_counter()
        s0, c0 = cpu()
        f()
        s1, c1 = cpu()
        print(f"rep={rep} {name:10s} load={load} wall={time.perf_counter() - w:5.2f} "
              f"cpu={s1 - s0 + c1 - c0:5.2f} (self {s1 - s0:.2f}, children {c1 - c0:.2f})",
              flush=True)
