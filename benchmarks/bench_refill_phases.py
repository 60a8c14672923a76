"""Where ``plan.refill()``'s host time goes, phase by phase, after the engine's post-load step.

The same workloads as ``derivgraph bench`` (``deepseek``: 61 layers, 496 derived; ``reference``:
794 derived, the engine rebuilds its owner objects). Each round reloads the weights, reruns the
engine's post-load step, waits for the device, then times on the host (no device wait):
``refill`` (the public call), and in a second round the phases it is made of, in its order:
``restore`` (startup storage under re-pointed tensors), ``sources`` (the owner-hop sweep,
then the source identity and address sweeps: the call the refill makes, with its report),
``owners`` (the refill's owner check, which reuses that hop sweep), ``read`` (every holder
read), ``check`` (the fresh tensors' identity, shape, dtype and meta sweeps), ``copy`` (the
batched ``_foreach_copy_`` calls, host side), ``rebind`` (holders put back). Also
``post_load`` (the engine's step, device waited). Medians and minima in microseconds, one
JSON object. ``--clock cpu`` times with the thread's CPU clock (a loaded machine), ``wall``
(default) with ``time.perf_counter``.

    python3 benchmarks/bench_refill_phases.py --workload deepseek --repeat 41
    python3 benchmarks/bench_refill_phases.py --workload deepseek --repeat 41 --clock cpu
    python3 benchmarks/bench_refill_phases.py --device cuda --workload deepseek --repeat 41
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime.report import RunReport
from derivgraph.tools.bench import _workload

PHASES = ("restore", "sources", "owners", "read", "check", "copy", "rebind")


def _phases(plan: Any) -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    """The refill's batched path, phase by phase (each reads what the one before left)."""
    holders = plan.holders

    def take(state: dict[str, Any]) -> None:
        state["taken"] = plan._refill_table.take(state["current"])

    def read(state: dict[str, Any]) -> None:
        state["current"] = holders.table.current()

    def rebind(state: dict[str, Any]) -> None:  # as the refill does: the read's proof reused
        every = plan._refill_table.whole and state["taken"].mask is None
        holders.note_read(state["report"], state["current"], every=every)
        holders.rebind(state["report"])

    def owners(state: dict[str, Any]) -> None:
        if hasattr(holders, "owners_current_for"):  # the hop sweep of `sources` reused
            holders.owners_current_for(state["report"])
        else:
            holders.owners_current()

    return [("restore", lambda s: plan.tensors.restore_storage()),
            ("sources", lambda s: holders.sources_intact(s["report"])),
            ("owners", owners),
            ("read", read), ("check", take), ("copy", lambda s: s["taken"].copy()),
            ("rebind", rebind)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workload", default="deepseek", choices=["deepseek", "reference"])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"])
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else \
        (lambda: time.thread_time_ns() / 1e9)
    cuda = args.device == "cuda"
    model, specs, reload, post_load, _ = _workload(args.device, args.workload, 61, None)
    plan = compile_plan(model, specs)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def fresh(i: int) -> None:
        reload(i)
        post_load()
        sync()

    fresh(0)
    plan.refill()  # resolves the accessors and the refill table
    sync()
    times: dict[str, list[float]] = {k: [] for k in ("post_load", "refill", *PHASES)}
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(args.repeat):
            reload(i)
            sync()
            t0 = clock()
            post_load()
            sync()
            times["post_load"].append(clock() - t0)
            t0 = clock()
            plan.refill()
            times["refill"].append(clock() - t0)
            sync()
            fresh(i + 1)
            state: dict[str, Any] = {"report": RunReport(mode="refill")}
            for name, phase in _phases(plan):
                t0 = clock()
                phase(state)
                times[name].append(clock() - t0)
            if state["taken"] is None:
                raise SystemExit("the batched refill path was not taken")
            sync()
    gc.unfreeze()
    result: dict[str, Any] = {
        "device": args.device, "workload": args.workload, "repeat": args.repeat,
        "clock": args.clock,
        "derived": len(plan.entries), "torch": torch.__version__,
        "median_us": {k: round(statistics.median(v) * 1e6, 1) for k, v in times.items()},
        "min_us": {k: round(min(v) * 1e6, 1) for k, v in times.items()},
    }
    result["phases_sum_median_us"] = round(sum(result["median_us"][k] for k in PHASES), 1)
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(text)  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
