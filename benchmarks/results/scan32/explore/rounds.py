# ruff: noqa
"""scan32 exploration instrument (one run, serial --jobs 1 scan of vLLM 0.33.0): see BENCHMARKS.md, scan32.
On the base (git archive of ba2b206): PYTHONPATH=/tmp/base_scan32 python3 benchmarks/results/scan32/explore/rounds.py > benchmarks/results/scan32/explore/rounds.txt"""
import time, collections
import derivgraph.audit.static.scan as sc
rounds = []
orun = sc._run
def run(jobs_list, texts, context, jobs, progress):
    t = time.process_time(); out = orun(jobs_list, texts, context, jobs, progress); dt = time.process_time() - t
    empty = sum(1 for r in out if not r[0] and not r[1] and not r[2])
    nosite = sum(1 for r in out if not r[0])
    rounds.append((len(jobs_list), dt, empty, nosite))
    return out
sc._run = run
per = collections.defaultdict(list)
oa = sc._audit_one
def a1(src, text, context, index, extra=()):
    t = time.process_time(); r = oa(src, text, context, index, extra); dt = time.process_time() - t
    per[bool(extra)].append((dt, not r[0] and not r[1] and not r[2], not r[0] and not r[1], src.display))
    return r
sc._audit_one = a1
sc.scan(package="vllm", jobs=1)
for r in rounds: print("round: n=%d cpu=%.2f all-empty=%d no-sites=%d" % r)
for k, v in per.items():
    print("extra" if k else "own", "n", len(v), "cpu %.2f" % sum(x[0] for x in v), "cpu of all-empty %.2f" % sum(x[0] for x in v if x[1]), "cpu no sites/ext %.2f" % sum(x[0] for x in v if x[2]))
    for x in sorted(v, reverse=True)[:8]: print("   %.3f %s %s" % (x[0], x[1], x[3]))
import re
from derivgraph.audit.static.scope import ROOT_DEF_RE, ROOT_ASSIGN_RE, LAZY_GUARD_RE
from derivgraph.audit.static.classwide import GATE_RE
from derivgraph.audit.static.staging import has_staging_copy
from derivgraph.audit.static.sources import collect_files
texts = {s.display: s.path.read_text() for s in collect_files((), "vllm")}
why = collections.Counter(); wt = collections.Counter()
for dt, empty, _, disp in per[False]:
    if not empty: continue
    t = texts[disp]
    k = tuple(n for n, r in [("def", ROOT_DEF_RE), ("assign", ROOT_ASSIGN_RE), ("lazy", LAZY_GUARD_RE), ("gate", GATE_RE)] if r.search(t)) + (("staging",) if has_staging_copy(t) else ())
    why[k] += 1; wt[k] += dt
for k, v in why.most_common(): print(k, v, "%.2f" % wt[k])
