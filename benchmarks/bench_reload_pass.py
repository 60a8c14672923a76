"""Benchmark the reload pass on a scaled-up reference model.

Measures compile time (bind + validate + adopt), the in-place recompute pass (``plan.run``),
the refill after the engine's own post-load step (``plan.refill``), a selective run, and on CUDA
the extra device memory the pass needs beyond the startup storage.

    python3 benchmarks/bench_reload_pass.py --device cpu --layers 61
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from derivgraph import compile_plan, load_specs
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time(fn, device: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--layers", type=int, default=61)
    parser.add_argument("--experts", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    cfg = RefConfig(vocab=128, hidden=args.hidden, experts=args.experts,
                    intermediate=args.hidden // 2, layers=args.layers, drafter_layers=4)
    weights = make_weights(cfg, 0)
    model = build_reference_model(weights, args.device, cfg)
    specs = load_specs([reference_spec_path()])

    start = time.perf_counter()
    plan = compile_plan(model, specs)
    compile_s = time.perf_counter() - start

    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    run_s = _time(lambda: plan.run(), args.device, args.repeat)
    extra = torch.cuda.max_memory_allocated() - base if args.device == "cuda" else None

    def engine_then_refill():
        model.process_weights_after_loading()
        plan.refill()

    refill_s = _time(engine_then_refill, args.device, args.repeat)
    post_load_s = _time(model.process_weights_after_loading, args.device, args.repeat)
    plan.refill()
    selective_s = _time(lambda: plan.run(updated=["layers.0.moe"]), args.device, args.repeat)
    report = plan.run(verify=True)
    derived_bytes = sum(r["bytes"] for r in plan.rows())
    result = {
        "device": args.device,
        "layers": args.layers,
        "experts": args.experts,
        "hidden": args.hidden,
        "derived_tensors": len(plan),
        "derived_bytes": derived_bytes,
        "steps": len(plan.steps),
        "cse_hits": plan.graph.cse_hits,
        "compile_s": round(compile_s, 4),
        "run_ms": round(run_s * 1e3, 3),
        "selective_run_ms": round(selective_s * 1e3, 3),
        "engine_post_load_ms": round(post_load_s * 1e3, 3),
        "engine_post_load_plus_refill_ms": round(refill_s * 1e3, 3),
        "refill_only_ms_est": round((refill_s - post_load_s) * 1e3, 3),
        "moved_after_run": len(report.moved),
        "pass_extra_device_bytes": extra,
    }
    print(json.dumps(result, indent=2))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
