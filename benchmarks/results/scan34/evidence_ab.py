"""The evidence phase A/B, in process, alternating: findings dealt every n-th to each worker
(29893d9) against a file's findings to one worker (forked.affinity_order), jobs=2; wall and
CPU (parent + forked workers, user+sys) per run, and the judged findings compared.
PYTHONPATH=<tree> python3 benchmarks/results/scan34/evidence_ab.py PAIRS"""
import resource
import statistics
import sys
import time

import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.scan as S

captured = {}
_apply = S.apply_evidence


def grab(*a, **k):
    captured["args"] = (a, k)
    return _apply(*a, **k)


S.apply_evidence = grab
S.scan(package="vllm")
a, k = captured["args"]
affinity = E.affinity_order


def every_nth(keys, workers):
    return [i for w in range(workers) for i in range(w, len(keys), workers)]


def cpu():
    x = resource.getrusage(resource.RUSAGE_SELF)
    y = resource.getrusage(resource.RUSAGE_CHILDREN)
    return x.ru_utime + x.ru_stime + y.ru_utime + y.ru_stime


runs = {"every-nth": [], "affinity": []}
ref = None
for pair in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    for name, order in (("every-nth", every_nth), ("affinity", affinity)):
        E.affinity_order = order
        load = open("/proc/loadavg").read().split()[0]
        w, c = time.perf_counter(), cpu()
        out = _apply(*a, **k)
        wall, used = time.perf_counter() - w, cpu() - c
        runs[name].append((wall, used))
        same = ref is None or out == ref
        ref = ref or out
        print(f"pair={pair} {name:9s} load={load} wall={wall:5.2f} cpu={used:5.2f} "
              f"same_findings={same}", flush=True)
for name, v in runs.items():
    print(f"{name:9s} median wall {statistics.median(x[0] for x in v):.2f} "
          f"cpu {statistics.median(x[1] for x in v):.2f}")
d_cpu = [b[1] - a_[1] for a_, b in zip(runs["every-nth"], runs["affinity"])]
d_wall = [b[0] - a_[0] for a_, b in zip(runs["every-nth"], runs["affinity"])]
print("per pair affinity - every-nth: cpu", " ".join(f"{x:+.2f}" for x in d_cpu),
      f"median {statistics.median(d_cpu):+.2f}; wall", " ".join(f"{x:+.2f}" for x in d_wall),
      f"median {statistics.median(d_wall):+.2f}")
