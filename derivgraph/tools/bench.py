"""``derivgraph bench``: the reload pass against the naive reallocating rerun, in one process.

Interleaved, medians: the engine's own post-load step (naive), ``plan.run()`` eager, a selective
run of one layer, ``plan.refill()`` after the post-load (alone, host side only, and together
with the post-load), ``plan.run()`` on the captured plan (a CUDA graph on CUDA, a dispatch
recording on CPU) and that recording replayed alone, a measured copy bandwidth and the HBM
floor (bytes the pass reads and writes / bandwidth), peak extra memory of each, compile time
and node count, and the ratios (``naive_over_*``, ``*_over_floor``). ``--json`` prints one
object. ``--workload scaling`` is :mod:`derivgraph.tools.bench_scaling` (compile time).
"""

from __future__ import annotations

import gc
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


_KEYS = ("naive", "pass", "selective", "refill", "refill_host", "refill_host_cpu",
         "post_load_refill", "pass_captured_plan", "graph", "graph_serial", "graph_alone")


def _copy_bandwidth(sync: Callable[[], None]) -> float:
    """Measured device copy bandwidth (bytes read + written per second)."""
    big = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    other = torch.empty_like(big)
    bw = []
    for _ in range(10):
        sync()
        t0 = time.perf_counter()
        other.copy_(big)
        sync()
        bw.append(2 * big.numel() / (time.perf_counter() - t0))
    return statistics.median(bw)


def bench(device: str = "cpu", workload: str = "reference", *, repeat: int = 21,
          layers: int = 61, scale: float | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the result object (``None`` where not applicable).

    Per round, interleaved: ``naive`` (the engine's post-load step alone), ``refill`` (then
    ``plan.refill()`` alone; ``refill_host`` the same call without waiting for the device;
    ``refill_host_cpu`` the same call on the thread's CPU clock: on a busy host the wall
    clock counts waits for a core, this does not), ``post_load_refill`` (both in one timing),
    ``pass`` (``plan.run()`` eager, on a second copy of the workload whose plan is never
    captured: the program of a plan as compiled, on CPU the flat groups of
    :mod:`derivgraph.compiler.flat`), ``pass_captured_plan`` (an eager run of the captured plan:
    the program a recording needs, on CPU one ``torch._foreach_*`` call per operation; what a
    captured plan's eager fallback costs), ``selective`` (one layer), ``graph`` (``plan.run()`` on
    the captured plan: the public path, host checks included; on CUDA the replay is launched
    before the host checks, which overlap it), ``graph_serial`` (the same with the checks
    before the replay) and ``graph_alone`` (the same recording replayed, no host work); these
    three run in an order rotated every round (the first replay after other device work
    starts with colder caches). The objects made before the first timing are frozen
    (``gc.freeze()``, as vLLM does after start-up);
    medians, and minima in ``min_ms``.
    """
    cuda = device == "cuda"
    model, specs, reload, post_load, layer0 = _workload(device, workload, layers, scale)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    start = time.perf_counter()
    plan = compile_plan(model, specs)
    compile_ms = (time.perf_counter() - start) * 1e3
    plan.run()
    # the eager pass of a plan as compiled: capture() below swaps the CPU program for one a
    # recording can check, so the uncaptured plan is a second copy of the workload
    _model, _specs, reload_eager, _post_load, _layer = _workload(device, workload, layers, scale)
    eager_plan = compile_plan(_model, _specs)
    eager_plan.run()
    sync()
    plan.capture()  # a CUDA graph on CUDA, a dispatch recording on CPU
    sync()
    times: dict[str, list[float]] = {k: [] for k in _KEYS}
    peaks: dict[str, int] = {k: 0 for k in times}

    gc.collect()
    gc.freeze()  # as vLLM does after start-up: collections then scan only what runs allocate

    def timed(key: str, fn: Callable[[], Any], *, wait: bool = True,
              cpu: str | None = None) -> None:
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        if wait:
            sync()
        times[key].append((time.perf_counter() - t0) * 1e3)
        if cpu is not None:  # the same call on this thread's CPU clock (a busy host's check)
            times[cpu].append((time.thread_time() - c0) * 1e3)
        if cuda:
            sync()
            peaks[key] = max(peaks[key], torch.cuda.max_memory_allocated() - base)

    def eager_run() -> None:
        plan._captured = False
        try:
            plan.run()
        finally:
            plan._captured = True

    def serial_run() -> None:  # the captured run with its host checks before the replay
        # getattr: side by side, the same benchmark runs against trees without the attribute
        overlap, plan.overlap_checks = getattr(plan, "overlap_checks", None), False
        try:
            plan.run()
        finally:
            plan.overlap_checks = overlap

    def both() -> None:
        post_load()
        plan.refill()

    for i in range(repeat):
        reload(i)
        timed("naive", post_load)
        timed("refill", plan.refill)
        reload(i + 1)
        post_load()
        timed("refill_host", plan.refill, wait=False, cpu="refill_host_cpu")
        reload(i)
        timed("post_load_refill", both)
        reload_eager(i + 1)
        timed("pass", eager_plan.run)
        reload(i + 1)
        timed("pass_captured_plan", eager_run)
        timed("selective", lambda: plan.run(updated=[layer0]))
        # the first replay after other device work starts colder (caches, TLB): rotate the
        # order so that no captured variant is always the one that pays for it
        captured = [("graph", plan.run), ("graph_serial", serial_run),
                    ("graph_alone", plan._recording.replay)]
        for key, fn in captured[i % 3:] + captured[:i % 3]:
            timed(key, fn)
    written, read = _traffic(plan)
    bandwidth = _copy_bandwidth(sync) if cuda else None
    floor_ms = (read + written) / bandwidth * 1e3 if bandwidth else None

    def med(key: str) -> float | None:
        return round(statistics.median(times[key]), 4) if times[key] else None

    result: dict[str, Any] = {
        "device": device, "workload": workload, "repeat": repeat,
        **{f"{k}_ms": med(k) for k in _KEYS},
        "min_ms": {k: round(min(v), 4) for k, v in times.items() if v},  # a loaded host's floor
        "floor_ms": None if floor_ms is None else round(floor_ms, 4),
        "copy_bandwidth_gbs": None if bandwidth is None else round(bandwidth / 1e9, 1),
        "peak_extra_bytes": peaks if cuda else None,
        "compile_ms": round(compile_ms, 1),
        "nodes": len(plan.graph.nodes), "derived": len(plan.entries),
        "groups": plan.program.groups if plan.program else 0,
        "bytes_read": read, "bytes_written": written,
    }
    gc.unfreeze()
    naive = result["naive_ms"]
    for key in ("pass", "pass_captured_plan", "graph", "graph_serial", "graph_alone",
                "selective"):
        value = result[f"{key}_ms"]
        result[f"naive_over_{key}"] = round(naive / value, 2) if naive and value else None
        if floor_ms:
            result[f"{key}_over_floor"] = round(value / floor_ms, 2) if value else None
    result["full_over_selective"] = round(result["pass_ms"] / result["selective_ms"], 1) \
        if result["selective_ms"] else None
    result["refill_over_post_load"] = round(result["refill_ms"] / naive, 2) if naive else None
    result["post_load_refill_over_post_load"] = \
        round(result["post_load_refill_ms"] / naive, 2) if naive else None
    result["naive_over_refill"] = round(naive / result["refill_ms"], 2) \
        if result["refill_ms"] else None
    return result
