"""Benchmark the static audit on an installed package (default: vLLM).

Two timings, medians of ``--repeat`` runs (default 3):

* ``cli``: the whole command as a user runs it, in a fresh interpreter each time
  (``python3 -m derivgraph.cli audit static --package vllm --format json --output FILE``):
  interpreter start, importing derivgraph (and torch, which ``derivgraph/__init__`` imports),
  loading the spec library, scanning and writing the report;
* ``scan``: :func:`derivgraph.audit.static.scan.scan` alone, in this process.

    python3 benchmarks/bench_static_audit.py                 # vLLM, all CPUs
    python3 benchmarks/bench_static_audit.py --jobs 1        # one process
    python3 benchmarks/bench_static_audit.py --package torch --repeat 1

Writes one JSON object (the timings and what was scanned) to stdout, or to ``--json FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cli_once(package: str, jobs: int | None, out: Path) -> float:
    cmd = [sys.executable, "-m", "derivgraph.cli", "audit", "static", "--package", package,
           "--format", "json", "--output", str(out)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="vllm")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)

    from derivgraph.audit.static.scan import scan
    from derivgraph.spec.load import default_specs

    specs = default_specs()
    scans, report = [], None
    for _ in range(args.repeat):
        start = time.perf_counter()
        report = scan(package=args.package, specs=specs, jobs=args.jobs)
        scans.append(time.perf_counter() - start)
    assert report is not None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        clis = [_cli_once(args.package, args.jobs, out) for _ in range(args.repeat)]
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
