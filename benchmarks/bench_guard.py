"""Guard cost on the 61-layer reference model, as a ratio to the engine's post-load step.

One process, interleaved rounds, medians: ``post`` is the engine's post-load step (every derived
tensor rebuilt); ``census`` is the runtime census walk (``reach``, no hashing); ``restore`` is
``Guard.restore`` right after a post-load step (the watch's container sweeps: with dict version
tags, one gather of the tags and the lengths and items of the dicts whose tag moved; the storage
address check (one gather of the storage words where proven), a diff of the changed containers, a
template descent of the rebuilt objects, one ``_foreach_copy_`` per dtype and device, the holders
re-pointed); ``restore_full`` walks the whole model instead; ``copy_floor`` is one
``_foreach_copy_`` of the same tensors the restore copies (the guarded ones), from tensors of the
same layouts: in guard-only mode every derived tensor is rebuilt by the engine and must be copied
back, a floor no guard can beat. ``sweep`` is the restore's two C-level sweeps alone (the watched
containers' lengths and item identities, the startup storage addresses), timed after a reload of
their own: what proving "nothing moved" costs before any Python work per change. ``snapshot`` is the
one-off cost after the first post-load step. Objects made before the first round are frozen
(``gc.freeze()``, as vLLM does after start-up). Two setups: ``guard-only`` (no spec: the guard keeps
every derived tensor) and ``plan+guard`` (the specs declare them; the guard keeps the rest, and the
row also times ``plan.refill()`` for comparison).

Workloads: ``reference`` (derivgraph/tools/reference_models.py, tiny per-expert scales: a
post-load step dominated by Python) and ``deepseek`` (derivgraph/tools/deepseek_workload.py:
61 MoE layers x 8 [256] constants plus 8 fused bf16 K/V stacks, ``--scale`` of [8192, 4096]).
``--clock cpu`` times with the thread's CPU clock (``time.thread_time``), which a shared,
loaded machine does not inflate by descheduling (torch runs on one thread then, so the clock
sees all of the work); ``wall`` is ``time.perf_counter``.

    python3 benchmarks/bench_guard.py --layers 61 --repeat 9 --json
    python3 benchmarks/bench_guard.py --workload deepseek --scale 0.25 --repeat 9 --json
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from derivgraph.audit.runtime.census import reach
from derivgraph.guard import Guard
from derivgraph.planner import compile_plan
from derivgraph.spec.load import load_specs
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def _workload(name: str, layers: int, scale: float) -> tuple[Any, Callable[[int], None],
                                                             Callable[[], None], Any]:
    """(model, load(i), post-load, specs)."""
    if name == "deepseek":
        model = DeepseekModel("cpu", scale, layers)
        model.post_load()
        return model, lambda i: model.reload(1 + i % 2), model.post_load, deepseek_specs()
    cfg = RefConfig(vocab=128, hidden=256, experts=64, intermediate=128, layers=layers,
                    drafter_layers=4)
    weights = [make_weights(cfg, seed) for seed in (1, 2)]
    model = build_reference_model(weights[0], "cpu", cfg)
    return (model, lambda i: model.load_weights(weights[i % 2]),
            model.process_weights_after_loading, load_specs([reference_spec_path()]))


def _sweeps(guard: Guard) -> bool:
    """The restore's two C-level sweeps alone: the watched containers (lengths and item
    identities, of the dicts whose version tag moved where the tags are proven) and the startup
    storage addresses (the guard's internals, read for this row)."""
    assert guard.watch is not None
    return not guard.watch._dirty() and guard.storage_kept()


def run(workload: str, layers: int, scale: float, repeat: int, with_plan: bool,
        clock: str) -> dict[str, Any]:
    now_s = CLOCKS[clock]
    model, load, post, specs = _workload(workload, layers, scale)
    plan = compile_plan(model, specs) if with_plan else None
    declared = list(plan.declared().values()) if plan is not None else []
    guard = Guard()
    start = now_s()
    snap = guard.snapshot(model, declared=declared)
    snapshot_s = now_s() - start
    kept = [e.keep for e in guard.startup.values() if not e.weight]
    sources = [t.clone() for t in kept]
    gc.collect()
    gc.freeze()  # as vLLM does after start-up: collections then scan only what runs allocate
    times: dict[str, list[float]] = {k: [] for k in (
        "post", "census", "restore", "restore_full", "refill", "copy_floor", "sweep")}

    def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
        start = now_s()
        out = fn()
        return now_s() - start, out

    last = None
    for i in range(repeat):
        load(i)
        times["post"].append(timed(post)[0])
        if plan is not None:
            times["refill"].append(timed(plan.refill)[0])
        now = list(plan.declared().values()) if plan is not None else []
        seconds, last = timed(functools.partial(guard.restore, model, declared=now))
        times["restore"].append(seconds)
        assert last.ok, last.recapture
        if kept:
            times["copy_floor"].append(timed(lambda: torch._foreach_copy_(kept, sources))[0])
        times["census"].append(timed(lambda: reach(model))[0])
        post()
        if plan is not None:
            plan.refill()
        times["restore_full"].append(timed(
            functools.partial(guard.restore, model, full=True, declared=now))[0])
        # the sweeps alone, after their own reload: what proving "nothing moved" costs
        load(i)
        post()
        if plan is not None:
            plan.refill()
        times["sweep"].append(timed(functools.partial(_sweeps, guard))[0])
        guard.restore(model, declared=now)
    gc.unfreeze()
    med = {k: statistics.median(v) for k, v in times.items() if v}
    row = {"workload": workload, "setup": "plan+guard" if with_plan else "guard-only",
           "clock": clock, "layers": layers, "guarded": len(snap.guarded),
           "weights": snap.weights, "restored_last": len(last.restored) if last else 0,
           "copied_mb": round(sum(t.numel() * t.element_size() for t in kept) / 2**20, 2),
           "snapshot_ms": round(snapshot_s * 1e3, 2),
           **{f"{k}_ms": round(v * 1e3, 3) for k, v in med.items()},
           "restore_over_post": round(med["restore"] / med["post"], 3),
           "restore_full_over_post": round(med["restore_full"] / med["post"], 2),
           "census_over_post": round(med["census"] / med["post"], 2),
           "sweep_over_post": round(med["sweep"] / med["post"], 3)}
    if "copy_floor" in med:
        row["copy_floor_over_post"] = round(med["copy_floor"] / med["post"], 3)
        row["restore_over_copy_floor"] = round(med["restore"] / med["copy_floor"], 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["reference", "deepseek"], default="reference")
    parser.add_argument("--layers", type=int, default=61)
    parser.add_argument("--scale", type=float, default=0.25, help="deepseek K/V stack scale")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.clock == "cpu":
        torch.set_num_threads(1)  # the thread's CPU clock must see every op's work
    rows = [run(args.workload, args.layers, args.scale, args.repeat, with_plan, args.clock)
            for with_plan in (False, True)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(" ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
