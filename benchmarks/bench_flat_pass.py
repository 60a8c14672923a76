"""The eager ``plan.run()`` with flat groups (``derivgraph.compiler.flat``) against the same plan
with one ``torch._foreach_*`` call per operation, in one process, alternating.

CPU, thread clock: each timing right after a reload (cold caches, as a real reload leaves them),
both passes compiled from one plan (the foreach one by ``Programs.flat = False``), so load
drifts hit both alike. Medians and minima in microseconds of ``run`` (the public call) and
``pass`` (the generated pass alone), and the engine's post-load (``naive``) for the ratio:

    PYTHONPATH=$PWD python3 benchmarks/bench_flat_pass.py --workload reference --repeat 21
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _harness import Timings


def measure(workload: str, repeat: int) -> dict[str, Any]:
    import torch

    from derivgraph.planner import compile_plan
    from derivgraph.tools.bench import _workload

    model, specs, reload, post_load, _ = _workload("cpu", workload, 61, None)
    plan = compile_plan(model, specs)
    timings = Timings("run_flat", "run_foreach", "pass_flat", "pass_foreach")
    for i in timings.rounds(repeat, reload, post_load, plan):
        for flat in (True, False):
            name = "flat" if flat else "foreach"
            plan.programs.flat = flat
            plan.install(plan.steps)
            reload(i + 1)
            timings.timed(f"run_{name}", plan.run)
            reload(i)
            timings.timed(f"pass_{name}", plan.program.fn)
    med, low = timings.medians_us(), timings.minima_us()
    return {"workload": workload, "repeat": repeat, "torch": torch.__version__,
            "median_us": med, "min_us": low,
            "naive_over_run": {k: round(med["naive"] / med[f"run_{k}"], 2)
                               for k in ("flat", "foreach")},
            "naive_over_run_min": {k: round(low["naive"] / low[f"run_{k}"], 2)
                                   for k in ("flat", "foreach")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", default="reference", choices=["deepseek", "reference"])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    result = measure(args.workload, args.repeat)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
