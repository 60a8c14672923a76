"""CPU (this process and its reaped workers) and wall of the context phase on the vLLM tree:
the former serial pass (``build_index`` and the per-file text tests, as in afd7c16) against
``tree_facts`` with 2 forked workers and the merge, alternating, in one process.

    python3 benchmarks/results/scan28/facts_cpu.py 3
"""
import gc
import os
import resource
import sys
import time

from derivgraph.audit.static.classwide import GATE_RE
from derivgraph.audit.static.index import build_index, merged_index
from derivgraph.audit.static.scope import (
    LAZY_GUARD_RE,
    ROOT_ASSIGN_RE,
    ROOT_DEF_RE,
    ancestors_index,
    regex_classes,
)
from derivgraph.audit.static.sources import collect_files
from derivgraph.audit.static.staging import has_staging_copy
from derivgraph.audit.static.tree_facts import tensor_functions, tree_facts


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def serial(files):
    bases: dict = {}
    for _, text in files:
        for cls, cls_bases in regex_classes(text):
            bases.setdefault(cls, set()).update(cls_bases)
        list(tensor_functions(text))
    ancestors = ancestors_index(bases)
    build_index(files, ancestors)
    for _, text in files:
        bool(ROOT_DEF_RE.search(text) or ROOT_ASSIGN_RE.search(text)
             or LAZY_GUARD_RE.search(text) or GATE_RE.search(text) or has_staging_copy(text))
        if "def __init__" in text:
            list(regex_classes(text))


def forked(files):
    facts = tree_facts(files, jobs=2)
    bases: dict = {}
    for f in facts:
        for cls, cls_bases in f.classes:
            bases.setdefault(cls, set()).update(cls_bases)
    merged_index([(m, f.index) for (m, _), f in zip(files, facts)], ancestors_index(bases))


gc.disable()
files = [(f.module, f.path.read_text()) for f in collect_files((), "vllm")]
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    for name, fn in (("serial", serial), ("forked", forked)):
        load = os.getloadavg()[0]
        c, w = cpu(), time.perf_counter()
        fn(files)
        print(f"{name} wall {time.perf_counter() - w:.2f} s cpu {cpu() - c:.2f} s load {load:.1f}")
