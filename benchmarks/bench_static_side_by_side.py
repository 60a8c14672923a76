"""Side by side: the static audit of one source tree against another, alternating runs.

    python3 benchmarks/bench_static_side_by_side.py --base /path/to/main/checkout --repeat 3

Runs ``python3 -m derivgraph.cli audit static --package vllm --format json -o FILE`` with
``PYTHONPATH`` set to the base tree, then to this tree, ``--repeat`` times, alternating, and
reports per tree the median wall time and the median and minimum CPU time of the child (user +
sys, from ``resource.getrusage``), plus the ratios this/base. CPU time is the figure to trust on a
shared machine; wall time also counts waiting for the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _once(tree: Path, package: str, out: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "derivgraph.cli", "audit", "static", "--package",
                    package, "--format", "json", "--output", str(out)], check=True, env=env,
                   stdout=subprocess.DEVNULL, cwd=tree)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the tree to compare against")
    parser.add_argument("--package", default="vllm")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    runs: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for name, tree in (("base", args.base.resolve()), ("this", HERE)):
                runs[name].append(_once(tree, args.package, Path(tmp) / f"{name}.json"))
    med = {name: {"wall_s": round(statistics.median(w for w, _ in r), 2),
                  "cpu_s": round(statistics.median(c for _, c in r), 2),
                  "cpu_min_s": round(min(c for _, c in r), 2),
                  "cpu_runs_s": [round(c, 2) for _, c in r]}
           for name, r in runs.items()}
    result = {"command": f"audit static --package {args.package} --format json",
              "repeat": args.repeat, "load_1min": round(os.getloadavg()[0], 1), **med,
              "ratio_wall": round(med["this"]["wall_s"] / med["base"]["wall_s"], 2),
              "ratio_cpu": round(med["this"]["cpu_s"] / med["base"]["cpu_s"], 2),
              "ratio_cpu_min": round(med["this"]["cpu_min_s"] / med["base"]["cpu_min_s"], 2)}
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
