"""The evidence phase's serial part (in the parent, before and after its forked workers), by
step: PYTHONPATH=<tree> python3 benchmarks/results/scan34/evidence_parent.py"""
from _common import wrap_cpu

import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.readers as R
import derivgraph.audit.static.scan as S

rows = []


def wrap(obj, name, label):
    wrap_cpu(obj, name, lambda t: rows.append((label, t)))


wrap(E, "ReaderIndex", "ReaderIndex()")
wrap(E, "reset_flags", "reset_flags")
wrap(E, "handed_tree", "handed_tree")
wrap(E, "kept_handoffs", "kept_handoffs")
wrap(R.ReaderIndex, "files_naming", "files_naming")
wrap(R.ReaderIndex, "prefetch", "prefetch")
wrap(E, "_judge_all", "_judge_all (wall of forked part incl.)")
wrap(S, "apply_evidence", "apply_evidence total (parent CPU)")
r = S.scan(package="vllm")
seen = {}
for label, t in rows:
    seen[label] = seen.get(label, 0) + t
for label, t in seen.items():
    print(f"{label:40s} {t:5.2f}")
