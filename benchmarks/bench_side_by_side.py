"""``derivgraph bench`` on two trees, alternating processes: this tree against another.

The same benchmark code (``derivgraph/tools/bench.py`` of this tree, so both print the same
figures) runs against each tree's ``derivgraph`` package in its own process, alternating, so
load drifts on a shared machine hit both alike. Prints one JSON object (``--json FILE`` keeps
it).

    mkdir -p /tmp/base && git archive main derivgraph | tar -x -C /tmp/base
    python3 benchmarks/bench_side_by_side.py --against /tmp/base --rounds 2 --repeat 21
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "derivgraph" / "tools" / "bench.py"
RUN = ("import importlib.util, json, sys\n"
       "spec = importlib.util.spec_from_file_location('bench_tool', sys.argv[1])\n"
       "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
       "print(json.dumps(mod.bench(sys.argv[4], sys.argv[2], repeat=int(sys.argv[3]))))\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", required=True, help="a directory holding derivgraph/")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--workloads", nargs="+", default=["deepseek", "reference"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    trees = {"this": ROOT, "against": Path(args.against).resolve()}
    runs: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            for workload in args.workloads:
                inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                             if p and Path(p).resolve() not in trees.values()]
                proc = subprocess.run([sys.executable, "-c", RUN, str(BENCH), workload,
                                       str(args.repeat), args.device], cwd=tree,
                                      capture_output=True, text=True, check=False,
                                      env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                          [str(tree), *inherited])})
                if proc.returncode != 0:  # the tree first, then what the caller had
                    sys.stderr.write(proc.stderr)
                    raise SystemExit(f"{name} {workload}: exit status {proc.returncode}")
                runs.setdefault(f"{name}_{workload}", []).append(
                    json.loads(proc.stdout.strip().splitlines()[-1]))
    text = json.dumps(runs)
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1) + "\n")
    print(text)  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
