"""Diagnostic (issue 20.2): how much of ``plan.refill()``'s host time is the engine's fresh
tensors being freed when the refill points the holders back at the startup storage.

Each round reloads, reruns the engine's post-load step, waits for the device, then times
``plan.refill()`` on the host, alternating two arms: ``freed`` (as in ``derivgraph bench``:
the engine's fresh tensors die inside the refill) and ``kept`` (a list made before the refill
holds them, so they die after it; their release is timed on its own as ``release``).
Medians and minima in microseconds, one JSON object.

    python3 benchmarks/results/s57/refill_free.py --device cuda --repeat 41
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=41)
    args = parser.parse_args()
    cuda = args.device == "cuda"
    model, specs, reload, post_load, _ = _workload(args.device, "deepseek", 61, None)
    plan = compile_plan(model, specs)

    def fresh(i: int) -> None:
        reload(i)
        post_load()
        if cuda:
            torch.cuda.synchronize()

    fresh(0)
    plan.refill()
    times: dict[str, list[float]] = {"freed": [], "kept": [], "release": []}
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(2 * args.repeat):
            fresh(i + 1)
            if i % 2:
                keep = plan.holders.table.current()  # the engine's fresh tensors
                t0 = time.perf_counter()
                plan.refill()
                times["kept"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                del keep
                times["release"].append(time.perf_counter() - t0)
            else:
                t0 = time.perf_counter()
                plan.refill()
                times["freed"].append(time.perf_counter() - t0)
            if cuda:
                torch.cuda.synchronize()
    gc.unfreeze()
    print(json.dumps({  # noqa: T201 - a benchmark script reports on stdout
        "device": args.device, "repeat": args.repeat, "derived": len(plan.entries),
        "median_us": {k: round(statistics.median(v) * 1e6, 1) for k, v in times.items()},
        "min_us": {k: round(min(v) * 1e6, 1) for k, v in times.items()}}))


if __name__ == "__main__":
    main()
