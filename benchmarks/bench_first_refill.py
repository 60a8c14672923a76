"""The first ``plan.refill()`` of a process against the steady state (CPU clock of the thread).

A fresh process builds the workload, compiles the plan (and, with ``--capture``, runs it once and
captures it, as ``derivgraph bench`` does), then reloads, reruns the engine's post-load step and
times ``plan.refill()`` on the thread's CPU clock, ``--repeat`` times. Prints one JSON object:
``first_us`` (the first refill), ``second_us``, ``steady_us`` (the median of the refills after
the first five) and ``first_over_steady``; ``compile_ms`` the compile (what moved there is paid
once). Run it in a fresh process per figure (``--repeat 1`` is the first refill alone):

    python3 benchmarks/bench_first_refill.py --workload deepseek --repeat 31
    python3 benchmarks/bench_first_refill.py --workload deepseek --repeat 31 --capture
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workload", default="deepseek", choices=["deepseek", "reference"])
    parser.add_argument("--repeat", type=int, default=31)
    parser.add_argument("--capture", action="store_true", help="run and capture before")
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    model, specs, reload, post_load, _ = _workload(args.device, args.workload, 61, None)
    start = time.perf_counter()
    plan = compile_plan(model, specs)
    compile_ms = (time.perf_counter() - start) * 1e3
    if args.capture:
        plan.run()
        plan.capture()
    gc.collect()
    gc.freeze()
    times: list[float] = []
    with torch.no_grad():
        for i in range(args.repeat):
            reload(i)
            post_load()
            if cuda:
                torch.cuda.synchronize()
            t0 = time.thread_time()
            plan.refill()
            times.append(time.thread_time() - t0)
            if cuda:
                torch.cuda.synchronize()
    gc.unfreeze()
    steady = statistics.median(times[5:]) if len(times) > 5 else None
    result: dict[str, Any] = {
        "device": args.device, "workload": args.workload, "repeat": args.repeat,
        "capture": args.capture, "compile_ms": round(compile_ms, 1),
        "first_us": round(times[0] * 1e6, 1),
        "second_us": round(times[1] * 1e6, 1) if len(times) > 1 else None,
        "steady_us": round(steady * 1e6, 1) if steady else None,
        "first_over_steady": round(times[0] / steady, 1) if steady else None,
        "all_us": [round(t * 1e6, 1) for t in times],
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
