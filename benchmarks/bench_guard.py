"""Guard cost on the 61-layer reference model, as a ratio to the engine's post-load step.

One process, interleaved rounds, medians: ``post`` is the engine's post-load step
(``ReferenceModel.process_weights_after_loading``: every derived tensor rebuilt); ``census`` is
the runtime census walk the guard is built on (``reach``, no hashing); ``restore`` is
``Guard.restore`` right after a post-load step (follow every guarded slot's chain, walk the
rebuilt objects for new tensors, copy each rebound value into its startup storage, re-point its
holders); ``restore_full`` walks the whole model instead; ``snapshot`` is the one-off cost after
the first post-load step. Two setups: ``guard-only`` (no spec: the guard keeps every derived
tensor) and ``plan+guard`` (the reference specs declare them; the guard keeps the rest, and the
row also times ``plan.refill()`` for comparison).

    python3 benchmarks/bench_guard.py --layers 61 --repeat 9 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from derivgraph.audit.runtime.census import reach
from derivgraph.guard import Guard
from derivgraph.planner import compile_plan
from derivgraph.spec.load import load_specs
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(layers: int, repeat: int, with_plan: bool) -> dict[str, Any]:
    cfg = RefConfig(vocab=128, hidden=256, experts=64, intermediate=128, layers=layers,
                    drafter_layers=4)
    weights = [make_weights(cfg, seed) for seed in (1, 2)]
    model = build_reference_model(weights[0], "cpu", cfg)
    plan = compile_plan(model, load_specs([reference_spec_path()])) if with_plan else None
    declared = list(plan.declared().values()) if plan is not None else []
    guard = Guard()
    start = time.perf_counter()
    snap = guard.snapshot(model, declared=declared)
    snapshot_s = time.perf_counter() - start
    times: dict[str, list[float]] = {"post": [], "census": [], "restore": [],
                                     "restore_full": [], "refill": []}
    last = None
    for i in range(repeat):
        model.load_weights(weights[i % 2])
        times["post"].append(_timed(model.process_weights_after_loading))
        if plan is not None:
            times["refill"].append(_timed(plan.refill))
        now = list(plan.declared().values()) if plan is not None else []
        start = time.perf_counter()
        last = guard.restore(model, declared=now)
        times["restore"].append(time.perf_counter() - start)
        assert last.ok, last.recapture
        times["census"].append(_timed(lambda: reach(model)))
        model.process_weights_after_loading()
        if plan is not None:
            plan.refill()
        start = time.perf_counter()
        guard.restore(model, full=True, declared=now)
        times["restore_full"].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    return {"setup": "plan+guard" if with_plan else "guard-only", "layers": layers,
            "guarded": len(snap.guarded), "weights": snap.weights,
            "restored_last": len(last.restored) if last else 0,
            "snapshot_ms": round(snapshot_s * 1e3, 2),
            **{f"{k}_ms": round(v * 1e3, 3) for k, v in med.items()},
            "restore_over_post": round(med["restore"] / med["post"], 2),
            "restore_full_over_post": round(med["restore_full"] / med["post"], 2),
            "census_over_post": round(med["census"] / med["post"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=61)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [run(args.layers, args.repeat, with_plan) for with_plan in (False, True)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(" ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
