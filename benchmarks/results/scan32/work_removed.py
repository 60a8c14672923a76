"""The work scan32 removes, measured serially (no fork) on vLLM 0.33.0, repeated N times:

1. the reads search: the findings' attributes split between two workers the way
   ``evidence._judge_all`` splits them (every other finding) cost two searches over nearly the
   same files (ba2b206), against one search for all of them (this tree);
2. ``source_dropped`` for the pass's calls: the memo filled file by file as calls need it
   (ba2b206's evidence pass, one memo per worker) against one ``zero_allocations`` pass and
   the calls after it (this tree).

CPU is this process's (time.process_time). From the worktree root, at commit 5c174da (part 2
needs ``platforms.zero_allocations``, which 56ead79 reverted: no gain, see BENCHMARKS.md):
    python3 benchmarks/results/scan32/work_removed.py 5 > work_removed_5c174da.txt  (then moved here)
On later commits it measures part 1 only.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
import derivgraph.audit.static.evidence as ev  # noqa: E402
import derivgraph.audit.static.platforms as pl  # noqa: E402
import derivgraph.audit.static.scan as sc  # noqa: E402
from derivgraph.audit.static.readers import ReaderIndex  # noqa: E402
from derivgraph.audit.static.semantics import Severity  # noqa: E402

cap: dict = {}
real_apply, real_dropped = ev.apply_evidence, ev.source_dropped
calls: list[tuple] = []


def grab(*a, **k):
    cap["a"], cap["k"] = a, k
    return real_apply(*a, **k)


def dropped(derives_from, body, tree, at=None, *, allocates=None):
    calls.append((derives_from, body, at))
    return real_dropped(derives_from, body, tree, at, allocates=allocates)


sc.apply_evidence, ev.source_dropped = grab, dropped
report = sc.scan(package="vllm", jobs=1)
findings, files, post_load, family = cap["a"][:4]
todo = [f for f in findings  # the findings apply_evidence judges (its own filter)
        if not (f.severity is Severity.INFO or f.category == "dynamic-name" and not any(
            m in f.file for m in ev.RELOAD_MACHINERY))]
attrs = [f.attr for f in todo]
halves = [{a for k, a in enumerate(attrs) if k % 2 == w} for w in (0, 1)]
tree = {d: t for d, t in files}
print(f"{len(files)} files, {len(attrs)} findings judged ({len(set(attrs))} attributes), "
      f"{len(calls)} source_dropped calls")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
res: dict[str, list[float]] = {k: [] for k in ("search per worker", "search once",
                                                "dropped per call", "dropped up front")}
for i in range(n):
    per_worker = 0.0
    for half in halves:
        index = ReaderIndex(files, post_load, family)
        index.files_naming("")
        t = time.process_time()
        index.prefetch(half)
        per_worker += time.process_time() - t
    index = ReaderIndex(files, post_load, family)
    index.files_naming("")
    t = time.process_time()
    index.prefetch(attrs)
    once = time.process_time() - t
    lazy_t = front_t = float("nan")
    if hasattr(pl, "zero_allocations"):
        t = time.process_time()
        memo: dict[str, bool] = {}
        lazy = [real_dropped(d, b, tree, at, allocates=memo) for d, b, at in calls]
        lazy_t = time.process_time() - t
        t = time.process_time()
        memo = pl.zero_allocations(tree)
        front = [real_dropped(d, b, tree, at, allocates=memo) for d, b, at in calls]
        front_t = time.process_time() - t
        assert lazy == front
    for key, v in zip(res, (per_worker, once, lazy_t, front_t)):
        res[key].append(v)
    print(f"run={i} load={os.getloadavg()[0]:.2f} search: two halves {per_worker:.3f} s, "
          f"once {once:.3f} s; source_dropped: per call {lazy_t:.3f} s, up front {front_t:.3f} s",
          flush=True)
for key, v in res.items():
    print(f"median {key}: {statistics.median(v):.3f} s")
