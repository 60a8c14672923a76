"""Where the eager ``plan.run()``'s CPU time goes after a reload, against the engine's post-load.

The ``derivgraph bench`` workloads on CPU, timed with the thread's CPU clock. Each round
reloads the weights (which sweeps the caches, as a real reload does) and times ``naive`` (the
engine's post-load step; then, untimed, the plan re-binds the holders it rebuilt, as in
``derivgraph bench``); reloads again and times ``run`` (``plan.run()`` eager, the public
call); reloads again and times the phases ``run`` is made of, in its order: ``restore``
(startup storage under re-pointed tensors: one address sweep), ``sources`` (the source check:
on trees that have it, the owner-hop sweep too), ``pass`` (the generated pass alone) and
``rebind`` (holders the engine rebuilt; the hop sweep where the source check did not do it).
Then, after another reload, ``pass_cold``: the generated pass alone with no sweep before it
(the objects the sweeps would have read are then cold for the pass: the floor of ``run``
without host checks). Medians and minima in microseconds, and ``naive_over_run``.

``--against TREE`` runs this script on this tree and on ``TREE`` (a directory holding
``derivgraph/``) in alternating processes, ``--rounds`` times each, and prints both:

    mkdir -p /tmp/base && git archive main derivgraph | tar -x -C /tmp/base
    python3 benchmarks/bench_pass_phases.py --against /tmp/base --rounds 2 --repeat 11

``--no-tags`` runs one process with the dict version tags unavailable (the same code, every
identity check a full sweep), for an A/B of the tags alone.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _harness import Timings

PHASES = ("restore", "sources", "pass", "rebind")
ROOT = Path(__file__).resolve().parents[1]


def measure(workload: str, repeat: int, tags: bool = True) -> dict[str, Any]:
    """One process: every figure of one tree (the ``derivgraph`` on ``sys.path``); ``tags``
    False: the dict version tags unavailable (every identity check a full sweep)."""
    import torch

    if not tags:
        from derivgraph import dict_versions

        dict_versions.AVAILABLE = False

    from derivgraph.planner import compile_plan
    from derivgraph.runtime.report import RunReport
    from derivgraph.tools.bench import _workload

    model, specs, reload, post_load, _ = _workload("cpu", workload, 61, None)
    plan = compile_plan(model, specs)
    plan.run()
    holders = plan.holders
    takes_report = "report" in inspect.signature(holders.sources_intact).parameters
    timings = Timings("run", *PHASES, "pass_cold")
    for i in timings.rounds(repeat, reload, post_load, plan):
        reload(i + 1)
        timings.timed("run", plan.run)
        reload(i)
        report = RunReport()
        steps = [("restore", plan.tensors.restore_storage),
                 ("sources", (lambda r=report: holders.sources_intact(r)) if takes_report
                  else holders.sources_intact),
                 ("pass", plan.program.fn), ("rebind", lambda r=report: plan.rebind(r))]
        for name, step in steps:
            ok = timings.timed(name, step)
            if name == "sources" and not ok:
                raise SystemExit("the source check failed: not the eager run's path")
        reload(i + 1)
        timings.timed("pass_cold", plan.program.fn)
    med = timings.medians_us()
    return {"workload": workload, "repeat": repeat, "derived": len(plan.entries), "tags": tags,
            "torch": torch.__version__, "median_us": med,
            "min_us": timings.minima_us(),
            "phases_sum_median_us": round(sum(med[k] for k in PHASES), 1),
            "naive_over_run": round(med["naive"] / med["run"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", default="reference", choices=["deepseek", "reference"])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--against", default=None, help="a directory holding derivgraph/")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--no-tags", action="store_true",
                        help="run with the dict version tags unavailable")
    args = parser.parse_args()
    if args.against is None:
        result: Any = measure(args.workload, args.repeat, not args.no_tags)
    else:
        result = {"this": [], "against": []}
        trees = {"this": ROOT, "against": Path(args.against).resolve()}
        for _ in range(args.rounds):
            for name, tree in trees.items():  # alternating processes: load drifts hit both
                proc = subprocess.run(
                    [sys.executable, __file__, "--workload", args.workload,
                     "--repeat", str(args.repeat)], cwd=tree, capture_output=True, text=True,
                    check=False, env={**os.environ, "PYTHONPATH": str(tree)})
                if proc.returncode != 0:
                    sys.stderr.write(proc.stderr)
                    raise SystemExit(f"{name}: exit status {proc.returncode}")
                result[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
