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
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any


def measure(workload: str, repeat: int) -> dict[str, Any]:
    import torch

    from derivgraph.planner import compile_plan
    from derivgraph.tools.bench import _workload

    model, specs, reload, post_load, _ = _workload("cpu", workload, 61, None)
    plan = compile_plan(model, specs)
    programs = {}
    for flat in (False, True):
        plan.programs.flat = flat
        plan.install(plan.steps)
        programs[flat] = plan.programs
    clock = time.thread_time_ns
    times: dict[str, list[int]] = {k: [] for k in (
        "naive", "run_flat", "run_foreach", "pass_flat", "pass_foreach")}
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(repeat):
            reload(i)
            t0 = clock()
            post_load()
            times["naive"].append(clock() - t0)
            plan.rebind()
            for flat in (True, False):
                name = "flat" if flat else "foreach"
                plan.programs.flat = flat
                plan.install(plan.steps)
                reload(i + 1)
                t0 = clock()
                plan.run()
                times[f"run_{name}"].append(clock() - t0)
                reload(i)
                fn = plan.program.fn
                t0 = clock()
                fn()
                times[f"pass_{name}"].append(clock() - t0)
    gc.unfreeze()
    med = {k: round(statistics.median(v) / 1e3, 1) for k, v in times.items()}
    low = {k: round(min(v) / 1e3, 1) for k, v in times.items()}
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
