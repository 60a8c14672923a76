"""``derivgraph bench``: the reload pass against the naive reallocating rerun, in one process.

Interleaved, medians: the engine's own post-load step (naive), ``plan.run()`` eager, a selective
run of one layer, ``plan.refill()`` after the post-load, the captured replay (CUDA), a measured
copy bandwidth and the HBM floor (bytes the pass reads and writes / bandwidth), peak extra memory
of each, compile time and node count. ``--json`` prints one object.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from derivgraph.compiler.graph import refs_in
from derivgraph.compiler.lower import Action
from derivgraph.planner import compile_plan
from derivgraph.spec.load import load_specs
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

__all__ = ["bench"]


def _workload(device: str, workload: str, layers: int, scale: float | None) -> Any:
    if workload == "reference":
        cfg = RefConfig(vocab=128, hidden=256, experts=64, intermediate=128, layers=layers,
                        drafter_layers=4)
        weights = [make_weights(cfg, seed) for seed in (1, 2)]
        model = build_reference_model(weights[0], device, cfg)
        specs = load_specs([reference_spec_path()])

        def reload(i: int) -> None:
            model.load_weights({k: v.to(device) for k, v in weights[i % 2].items()})

        return model, specs, reload, model.process_weights_after_loading, "layers.0."

    if scale is None:
        scale = 1.0 if device == "cuda" else 1 / 32
    model = DeepseekModel(device, scale, layers)
    model.reload(0)
    model.post_load()
    return model, deepseek_specs(), model.reload, model.post_load, "layers.0."


def _traffic(plan: Any) -> tuple[int, int]:
    """Bytes the pass writes (derived storage) and reads (each tensor operand it reads, once)."""
    written, seen, read = 0, set(), 0
    for step in plan.steps:
        if step.action in (Action.OUT, Action.COPY):
            written += plan.entries[step.target].nbytes()
        for ref in refs_in(step.args) + ([step.input] if step.input else []):
            if ref in seen:
                continue
            seen.add(ref)
            meta = plan.meta_env.get(ref)
            if isinstance(meta, torch.Tensor):
                read += meta.numel() * meta.element_size()
    return written, read


def bench(device: str = "cpu", workload: str = "reference", *, repeat: int = 21,
          layers: int = 61, scale: float | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the result object (``None`` where not applicable)."""
    cuda = device == "cuda"
    model, specs, reload, post_load, layer0 = _workload(device, workload, layers, scale)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    start = time.perf_counter()
    plan = compile_plan(model, specs)
    compile_ms = (time.perf_counter() - start) * 1e3
    plan.run()
    sync()
    if cuda:
        plan.capture()
        sync()
    captured = plan.captured
    times: dict[str, list[float]] = {k: [] for k in ("naive", "pass", "selective", "refill",
                                                      "graph")}
    peaks: dict[str, int] = {k: 0 for k in times}

    def timed(key: str, fn: Callable[[], Any]) -> None:
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        fn()
        sync()
        times[key].append((time.perf_counter() - t0) * 1e3)
        if cuda:
            peaks[key] = max(peaks[key], torch.cuda.max_memory_allocated() - base)

    def eager_run() -> None:
        plan._captured = False
        plan.run()
        plan._captured = captured

    for i in range(repeat):
        reload(i)
        timed("naive", post_load)
        timed("refill", plan.refill)
        reload(i + 1)
        timed("pass", eager_run)
        timed("selective", lambda: plan.run(updated=[layer0]))
        if captured:
            timed("graph", plan.run)
    written, read = _traffic(plan)
    floor_ms = bandwidth = None
    if cuda:
        big = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
        other = torch.empty_like(big)
        bw = []
        for _ in range(10):
            sync()
            t0 = time.perf_counter()
            other.copy_(big)
            sync()
            bw.append(2 * big.numel() / (time.perf_counter() - t0))
        bandwidth = statistics.median(bw)
        floor_ms = (read + written) / bandwidth * 1e3
        del big, other

    def med(key: str) -> float | None:
        return round(statistics.median(times[key]), 4) if times[key] else None

    naive, full = med("naive"), med("pass")
    result = {
        "device": device, "workload": workload, "repeat": repeat,
        "naive_ms": naive, "pass_ms": full, "selective_ms": med("selective"),
        "refill_ms": med("refill"), "graph_ms": med("graph"),
        "floor_ms": None if floor_ms is None else round(floor_ms, 4),
        "copy_bandwidth_gbs": None if bandwidth is None else round(bandwidth / 1e9, 1),
        "peak_extra_bytes": peaks if cuda else None,
        "compile_ms": round(compile_ms, 1),
        "nodes": len(plan.graph.nodes), "derived": len(plan.entries),
        "groups": plan.program.groups if plan.program else 0,
        "bytes_read": read, "bytes_written": written,
        "naive_over_pass": round(naive / full, 2) if naive and full else None,
        "full_over_selective": round(full / med("selective"), 1) if full else None,
        "refill_over_post_load": round(med("refill") / naive, 2) if naive else None,
    }
    if cuda and result["graph_ms"]:
        result["graph_over_floor"] = round(result["graph_ms"] / floor_ms, 2)
        result["naive_over_graph"] = round(naive / result["graph_ms"], 1)
    return result
