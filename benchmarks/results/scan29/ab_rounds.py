"""The first audit round (761 files, ``--jobs 1``) in one process, alternating the former code
paths (a function audit bound into its inference: the reference cycle; the audit walking its
reach again; method indents line by line) with scan29's, CPU time (``time.process_time``) per
pass. Alternating in one process keeps the machine's load common to both.

    python3 benchmarks/results/scan29/ab_rounds.py 3 > benchmarks/results/scan29/ab_rounds.txt
"""
import os
import statistics
import sys
import time
from contextlib import ExitStack
from unittest import mock

import derivgraph.audit.static.module as M
import derivgraph.audit.static.rules as R
import derivgraph.audit.static.segments as G
import derivgraph.audit.static.scan as S
from derivgraph.audit.static.sources import collect_files
from derivgraph.audit.static.tree_facts import tree_facts

files = collect_files([], "vllm")
texts = [(src, text) for src in files if (text := S._read(src)) is not None]
facts = tree_facts([(src.module, text) for src, text in texts], 1)
context = S._context(texts, facts)
candidates = [i for i, (_, text) in enumerate(texts) if S._is_candidate(text, facts[i], context)]
real_init, real_parse = R.FunctionAudit.__init__, M.parse_relevant


def bound_init(self, *a, **k):  # the former design: audit -> inference -> bound method -> audit
    real_init(self, *a, **k)
    self.inf.returns_tensor = self._bound


def parse_without_reach(*a, **k):
    scope = real_parse(*a, **k)
    scope.roots_reach = None
    return scope


def former_indents(source, lines):
    return [m.group(1) for ln in lines[1:] if (m := G._METHOD_LINE.match(ln))]


def one_pass(former: bool) -> tuple[float, int]:
    with ExitStack() as stack, S.young_collections_only():
        if former:
            stack.enter_context(mock.patch.object(R.FunctionAudit, "__init__", bound_init))
            stack.enter_context(mock.patch.object(R.FunctionAudit, "_bound", create=True,
                                                  new=lambda self, c: self._returns_tensor(c)))
            stack.enter_context(mock.patch.object(M, "parse_relevant", parse_without_reach))
            stack.enter_context(mock.patch.object(G, "_method_indents", former_indents))
        start = time.process_time()
        sites = sum(len(S._audit_one(*texts[i], context, i)[0]) for i in candidates)
        return time.process_time() - start, sites


runs: dict[str, list[float]] = {"former": [], "scan29": []}
for n in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    for name in ("former", "scan29"):
        cpu, sites = one_pass(name == "former")
        runs[name].append(cpu)
        print(f"pass {n + 1} {name:7s} cpu {cpu:6.2f} s  sites {sites}  load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
for name, cpus in runs.items():
    print(f"{name:7s} median {statistics.median(cpus):.2f} s  min {min(cpus):.2f} s")
print("per-pass difference scan29 - former:",
      [round(b - a, 2) for a, b in zip(runs["former"], runs["scan29"])])
