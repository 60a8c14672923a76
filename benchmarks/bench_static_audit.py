"""Benchmark the static audit on an installed package (default: vLLM).

Two timings, medians of ``--repeat`` runs (default 3):

* ``cli``: the whole command as a user runs it, in a fresh interpreter each time
  (``python3 -m derivgraph.cli audit static --package vllm --format json --output FILE``):
  interpreter start, importing derivgraph (and torch, which ``derivgraph/__init__`` imports),
  loading the spec library, scanning and writing the report;
* ``scan``: :func:`derivgraph.audit.static.scan.scan` alone, in this process.

For the command it also reports the CPU time (user + sys of the process and its worker
processes, from ``getrusage(RUSAGE_CHILDREN)``), less sensitive to a loaded machine than wall
time, and ``--same-as FILE`` asserts that every run's JSON report is byte-identical to FILE
(a report saved before a speed change).

    python3 benchmarks/bench_static_audit.py                 # vLLM, all CPUs
    python3 benchmarks/bench_static_audit.py --jobs 1        # one process
    python3 benchmarks/bench_static_audit.py --package torch --repeat 1
    python3 benchmarks/bench_static_audit.py --repeat 5 --same-as before.json

Writes one JSON object (the timings and what was scanned) to stdout, or to ``--json FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli_once(package: str, jobs: int | None, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of the command."""
    cmd = [sys.executable, "-m", "derivgraph.cli", "audit", "static", "--package", package,
           "--format", "json", "--output", str(out)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    cpu, start = _cpu(), time.perf_counter()  # the child and its reaped workers
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="vllm")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scan-repeat", type=int, default=None,
                        help="in-process scans (default: --repeat)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--same-as", type=Path, metavar="FILE",
                        help="fail unless every run's JSON report equals FILE byte for byte")
    args = parser.parse_args(argv)

    from derivgraph.audit.static.scan import scan
    from derivgraph.spec.load import default_specs

    specs = default_specs()
    scans, report = [], None
    for _ in range(args.repeat if args.scan_repeat is None else args.scan_repeat):
        start = time.perf_counter()
        report = scan(package=args.package, specs=specs, jobs=args.jobs)
        scans.append(time.perf_counter() - start)
    assert report is not None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        clis, cpus = [], []
        for _ in range(args.repeat):
            wall, cpu = _cli_once(args.package, args.jobs, out)
            clis.append(wall)
            cpus.append(cpu)
            if args.same_as and out.read_bytes() != args.same_as.read_bytes():
                raise SystemExit(f"the report differs from {args.same_as}")
        rows = json.loads(out.read_text())
    result = {
        "package": args.package,
        "jobs": args.jobs or os.cpu_count(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "files_scanned": report.files_scanned,
        "files_audited": report.files_audited,
        "sites": len(report.findings),
        "undeclared": len(report.undeclared()),
        "undeclared_by_severity": dict(report.by_severity()),
        "cli_sites": len(rows),
        "cli_s": {"median": round(statistics.median(clis), 2),
                  "runs": [round(t, 2) for t in clis]},
        "cli_cpu_s": {"median": round(statistics.median(cpus), 2),
                      "runs": [round(t, 2) for t in cpus]},
        "same_as": str(args.same_as) if args.same_as else None,
        "scan_s": {"median": round(statistics.median(scans), 2),
                   "runs": [round(t, 2) for t in scans]},
    }
    text = json.dumps(result, indent=2)
    sys.stdout.write(text + "\n")
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
