"""Audits, CPU and parse CPU (``parse_for_audit``, which includes the reach rounds of the
segmented parse) per audit round, ``--jobs 1``.

    python3 benchmarks/results/scan28/rounds.py
"""
import sys
import time

import derivgraph.audit.static.module as M
import derivgraph.audit.static.scan as S
from derivgraph.cli import main

R: list[tuple[int, float, float]] = []
P = [0.0]
_run, _parse = S._run, M.parse_for_audit


def run(jobs_list, *a, **k):
    t, p0 = time.process_time(), P[0]
    r = _run(jobs_list, *a, **k)
    R.append((len(jobs_list), round(time.process_time() - t, 2), round(P[0] - p0, 2)))
    return r


def parse(*a, **k):
    t = time.process_time()
    r = _parse(*a, **k)
    P[0] += time.process_time() - t
    return r


S._run, M.parse_for_audit = run, parse
sys.argv = ["derivgraph", "audit", "static", "--package", "vllm", "--format", "json", "-o",
            "/dev/null", "--jobs", "1"]
try:
    main()
except SystemExit:
    pass
print("rounds (jobs, cpu, parse cpu):", R, file=sys.stderr)
