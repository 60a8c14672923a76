"""The evidence pass's findings split among 2 forked workers in several ways; per way, the
phase's wall and each worker's CPU (max of the two ~ the wall on a quiet 2-core machine).
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/evidence_partitions.py WAY..."""
import cProfile, os, pstats, sys, time
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.forked as F
import derivgraph.audit.static.scan as S
from derivgraph.audit.static.handed_reader import handed_tree

WAYS = sys.argv[1:] or ["base"]
COUNT = os.environ.get("COUNT") == "1"  # worker_cpu: function calls (millions), not seconds
results = {}

def groups_of(keys):
    g = {}
    for k, key in enumerate(keys):
        g.setdefault(key, []).append(k)
    return list(g.values())

def chunks_for(way, todo, workers):
    n = len(todo)
    if way == "all":  # one worker judges everything: no repeated work
        return [list(range(n))]
    if way == "base":
        order = F.affinity_order([f.file for f in todo], workers)
        size = -(-n // workers)
        return [order[k:k + size] for k in range(0, n, size)]
    kind, _, per = way.partition(":")
    per = int(per or 1)
    key = {"file": lambda f: f.file, "attr": lambda f: f.attr,
           "dir": lambda f: f.file.rsplit("/", 1)[0]}[kind]
    groups = sorted(groups_of([key(f) for f in todo]), key=len, reverse=True)
    nchunks = workers * per
    target = -(-n // nchunks)
    if per == 1:  # halves: largest group first to the emptiest
        runs = [[] for _ in range(workers)]
        for g in groups:
            min(runs, key=len).extend(g)
        return [sorted(r) for r in runs]
    runs = [[] for _ in range(nchunks)]
    for g in groups:
        min(runs, key=len).extend(g)
    return [sorted(r) for r in sorted(runs, key=len, reverse=True) if r]

orig = E._judge_all
def _judge_all(judge, index, todo, jobs):
    workers = F.workers_for(len(todo), jobs, 32)
    index.files_naming(""); handed_tree(index); index.prefetch({f.attr for f in todo})
    chunks = chunks_for(WAY, todo, workers)
    def work(ids):
        out = []
        for c in ids:
            c0 = time.process_time()
            if COUNT:  # function calls made: a load-independent measure of the work
                prof = cProfile.Profile(); prof.enable()
                judged = [judge(todo[k]) for k in chunks[c]]
                prof.disable()
                spent = pstats.Stats(prof).total_calls
            else:
                judged = [judge(todo[k]) for k in chunks[c]]
                spent = time.process_time() - c0
            out.append((judged, os.getpid(), spent))
        return out
    res = list(todo)
    cpu = {}
    t0 = time.perf_counter()
    for ids, got in F.forked_chunks(work, len(chunks), workers, 1):
        for c, (judged, pid, spent) in zip(ids, got):
            cpu[pid] = cpu.get(pid, 0) + spent
            for k, f in zip(chunks[c], judged):
                res[k] = f
    results[WAY] = (time.perf_counter() - t0, sorted(cpu.values()), [len(c) for c in chunks])
    return res
E._judge_all = _judge_all
import json
for WAY in WAYS:
    load = open("/proc/loadavg").read().split()[0]
    r = S.scan(package="vllm")
    digest = hash(json.dumps([(f.file, f.line, f.attr, f.severity.value, f.reader, f.evidence, f.derives_from) for f in r.findings]))
    w, cpus, sizes = results[WAY]
    print(f"{WAY:8s} load={load} judge_wall={w:.2f} worker_cpu={[round(c / (1e6 if COUNT else 1), 2) for c in cpus]} sum={sum(cpus) / (1e6 if COUNT else 1):.2f} chunks={len(sizes)} digest={digest}", flush=True)
