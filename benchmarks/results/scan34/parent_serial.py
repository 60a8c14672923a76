"""The parent's own (serial) CPU in a jobs=2 scan, by step of scan._scan_files: while it runs,
the second core has no scan work. PYTHONPATH=<tree> python3 parent_serial.py"""
import resource
import time

t0 = time.process_time()
from _common import wrap_cpu  # noqa: E402

import derivgraph.audit.static.scan as S  # noqa: E402

imp = time.process_time() - t0
rows = {}


def wrap(obj, name):
    def add(t, name=name):
        rows[name] = rows.get(name, 0) + t
    wrap_cpu(obj, name, add)


for n in ["collect_files", "default_specs", "_read", "tree_facts", "_context", "_is_candidate",
          "_run", "SpecIndex", "resolve_forwarded", "_mark_built_once", "mark_reload_skipped",
          "skip_set", "_finding", "apply_evidence", "mirror_forwarded"]:
    wrap(S, n)
s = time.process_time()
r = S.scan(package="vllm")
total = time.process_time() - s
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"import {imp:.2f}  scan parent CPU {total:.2f}  children {ch.ru_utime + ch.ru_stime:.2f}")
for k, v in sorted(rows.items(), key=lambda kv: -kv[1]):
    print(f"  {k:22s} {v:5.2f}")
print(f"  {'(rest of _scan_files)':22s} {total - sum(rows.values()):5.2f}")
