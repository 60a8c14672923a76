"""Issue 20.5's judgement: the vLLM reload benchmark under its published rule.

The rule (``BENCHMARKS.md``, "The judging rule of 20.5"; the constants and the verdict are
``vllm_integration.reload_bench.JUDGED_PROCESSES``/``JUDGED_REPEAT``/``GOAL`` and ``judge``):
``JUDGED_PROCESSES`` separate processes of ``bench_vllm_reload.py --clock cpu --repeat
JUDGED_REPEAT`` for the tree judged; the figure of each process is its ``steady_state_ratio``
(the median plugin reload after a plugin reload over the median ``off`` reload after an
``off`` one); the verdict is the median of those figures against ``GOAL``. With ``--base``,
a base tree's processes alternate with the judged tree's (base first in odd rounds, the judged
tree first in even ones) and are judged the same way, side by side. Each process starts only
once the 1-minute load average is below ``--max-load`` (waiting at most ``--wait`` seconds);
a process that started above it is flagged, and the summary says so. Every process is kept:
none is dropped or rerun.

    python3 benchmarks/judge_vllm_reload.py --out benchmarks/results/s62/judge
    python3 benchmarks/judge_vllm_reload.py --base /tmp/base62 --out benchmarks/results/s62/judge
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_integration.reload_bench import (  # noqa: E402  (the tree judged, not an install)
    GOAL,
    JUDGED_PROCESSES,
    JUDGED_REPEAT,
    judge,
)

logger = logging.getLogger("judge_vllm_reload")


def _wait_for_quiet(max_load: float, wait: float) -> float:
    """Wait until the 1-minute load is below ``max_load`` (at most ``wait`` s); the load then."""
    deadline = time.monotonic() + wait
    load = os.getloadavg()[0]
    while load >= max_load and time.monotonic() < deadline:
        time.sleep(10)
        load = os.getloadavg()[0]
    return load


def _one(tree: Path, out: Path, repeat: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, str(tree / "benchmarks" / "bench_vllm_reload.py"), "--clock", "cpu",
           "--repeat", str(repeat), "--json", str(out)]
    log_path = out.with_suffix(".log")
    with open(log_path, "w") as log:  # vLLM's own output: plain on a failure, gzipped once read
        subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=log, stderr=subprocess.STDOUT)
    with open(log_path, "rb") as src, gzip.open(log_path.with_suffix(".log.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)  # ~210 KB a process plain; the device's tree limit is 64 MiB
    log_path.unlink()
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="one JSON per process + summary")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the tree judged (default: this)")
    ap.add_argument("--base", type=Path, help="a base tree run alternately, side by side")
    ap.add_argument("--processes", type=int, default=JUDGED_PROCESSES)
    ap.add_argument("--repeat", type=int, default=JUDGED_REPEAT)
    ap.add_argument("--max-load", type=float, default=1.5)
    ap.add_argument("--wait", type=float, default=600.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out = args.out.resolve()  # each process runs in its own tree
    args.out.mkdir(parents=True, exist_ok=True)
    trees = {"tree": args.tree.resolve()}
    if args.base is not None:
        trees = {"base": args.base.resolve(), **trees}
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in trees}
    starts: dict[str, list[float]] = {k: [] for k in trees}
    for i in range(1, args.processes + 1):
        order = list(trees) if i % 2 else list(trees)[::-1]
        for label in order:
            load = _wait_for_quiet(args.max_load, args.wait)
            result = _one(trees[label], args.out / f"{label}_{i}.json", args.repeat)
            results[label].append(result)
            starts[label].append(round(load, 2))
            logger.info("%s %d: steady_state_ratio %s, paired %s, load at start %.2f", label, i,
                        judge([result])["ratios"], result["paired"]["ratio_median"], load)
    summary = {label: {**judge(results[label]), "tree": str(trees[label]),
                       "load_at_start": starts[label],
                       "quiet": all(x < args.max_load for x in starts[label]),
                       "paired_ratio_medians": [r["paired"]["ratio_median"]
                                                for r in results[label]]}
               for label in trees}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for label, s in summary.items():
        logger.info("%s: steady_state_ratio median %s of %s (goal <= %s): %s%s", label,
                    s["median"], s["ratios"], GOAL,
                    "met" if s["met"] else ("missed" if s["complete"] else "not judged"),
                    "" if s["quiet"] else " (a process started above the load limit)")


if __name__ == "__main__":
    main()
