"""CPU per phase of one in-process scan with --jobs 1 (serial: each phase's CPU is all of it).
    cd TREE && PYTHONPATH=$PWD python3 phases_j1.py"""
import time

import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.scan as S

spent: dict[str, float] = {}


def timed(name, fn):
    def inner(*a, **k):
        c = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - c
    return inner


S.tree_facts = timed("tree_facts", S.tree_facts)
S._context = timed("context", S._context)
S._run = timed("rounds", S._run)
S._mark_built_once = timed("construction", S._mark_built_once)
S.resolve_forwarded = timed("forwarded", S.resolve_forwarded)
S.mark_reload_skipped = timed("reload_skips", S.mark_reload_skipped)
S.skip_set = timed("skip_set", S.skip_set)
S.apply_evidence = timed("evidence", S.apply_evidence)
E._judge_all = timed("evidence.judge_all", E._judge_all)
S._read = timed("read", S._read)
S.SpecIndex = timed("spec_index", S.SpecIndex)
S._finding = timed("finding", S._finding)
c = time.process_time()
r = S.scan(package="vllm", jobs=1)
total = time.process_time() - c
print(f"total {total:.2f} findings {len(r.findings)}")
for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
    print(f"  {k:22s} {v:.3f}")
print(f"  {'rest':22s} {total - sum(v for k, v in spent.items() if k != 'evidence.judge_all' and k != 'skip_set'):.3f}")
