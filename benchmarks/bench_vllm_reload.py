"""vLLM end to end on CPU: ``reload_weights`` on the tiny Llama with the plugin against without.

The model is the tiny real ``LlamaForCausalLM`` of ``tests/fixtures/vllm_llama_reload.py``
(vLLM 0.33.0 on CPU, gloo, a model-level post-load step declared in
``tests/fixtures/vllm_llama.yaml``), loaded once with derivgraph's plugin (vLLM's own plugin
loader installs the hooks, the plan is compiled at the first post-load step). Then, in one
process and interleaved (the order alternates each round; objects made before the first
timing are frozen with ``gc.freeze()``, as vLLM does after start-up), vLLM's
``reload_weights(checkpoint A or B)`` is timed with ``DERIVGRAPH_VLLM_MODE=off`` (the hooks
forward straight to vLLM: vLLM alone) and with the plugin's default mode (``refill``: vLLM's
reload, then derivgraph's pass into the startup storage). Medians; ``plugin_over_off`` is the
ratio (goal <= 1.05); minima too (``min_*``: on a loaded host the floor of each), and the
10th and 25th percentiles (``q10_*``, ``q25_*``) with their ratios. ``--clock cpu`` times with
the thread's CPU clock (``time.thread_time``, torch on one thread so the clock sees every op),
which a shared, loaded machine does not inflate by descheduling.

``--pieces`` (a separate run: the probes cost a little each) also times, per plugin reload,
the session's completion, ``plan.refill(verify=True)`` and the guard's restore, and the parts
of them that exist in the tree measured (the refill's helpers, ``moved()``, the source check,
the guard's survey and address sweep), with the same clock; ``outside`` is the paired plugin
cost less the completion (the hooks and the session scopes).

    python3 benchmarks/bench_vllm_reload.py --repeat 41 \
        --json benchmarks/results/vllm_reload_cpu.json
    python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 301
    python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 301 --pieces
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _quantile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (a loaded host's lower quantiles are steadier than its median)."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "q10": round(_quantile(values, 10), 1),
            "min": round(min(values), 1)}


class _Probes:
    """Per-reload CPU or wall time of named callables, in microseconds (``--pieces``)."""

    def __init__(self, now: Callable[[], float]):
        self.now = now
        self.times: dict[str, list[float]] = {}

    def wrap(self, owner: Any, name: str, label: str) -> None:
        """Time ``owner.name`` (a module, class or dict) as ``label``; absent: skipped."""
        get = owner.get if isinstance(owner, dict) else lambda n: getattr(owner, n, None)
        fn = get(name)
        if fn is None:
            return
        times, now = self.times.setdefault(label, []), self.now

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = now()
            try:
                return fn(*args, **kwargs)
            finally:
                times.append((now() - start) * 1e6)

        if isinstance(owner, dict):
            owner[name] = timed
        else:
            setattr(owner, name, timed)

    def clear(self) -> None:
        for values in self.times.values():
            values.clear()


def _probe(probes: _Probes, session: Any, plan: Any) -> None:
    """The plugin's pieces, where the measured tree has them."""
    probes.wrap(session, "_complete", "complete")
    probes.wrap(type(plan), "refill", "plan.refill")
    guard = session.state_for(plan.model).guard
    if guard is not None:
        probes.wrap(type(guard), "restore", "guard.restore")
        probes.wrap(type(guard), "_moved_storage", "guard.restore: address sweep")
        probes.wrap(type(guard.watch), "survey", "guard.restore: survey")
    for helper in ("take_engine_values", "execute", "set_scalars", "rebind", "restore_storage"):
        probes.wrap(plan.bindings, helper, f"plan.refill: {helper}")
    # verify's moved(): Plan.moved on trees before e2e20b, Holders.moved (which Plan.moved
    # calls) on every tree since, where run() calls it with its report
    probes.wrap(type(plan.holders), "moved", "plan.refill: moved")
    probes.wrap(type(plan.holders), "sources_intact", "plan.refill: sources_intact (each)")


def _pieces(probes: _Probes, off: list[float], on: list[float]) -> dict[str, Any]:
    out = {k: {"calls": len(v) // len(on), **_summary(v)} for k, v in probes.times.items() if v}
    parts = [probes.times.get(k, []) for k in ("complete", "plan.refill", "guard.restore")]
    paired = [(a - b) * 1e3 for a, b in zip(on, off)]
    if all(len(p) == len(on) for p in parts):
        complete, refill, guard = parts
        out["complete - refill - guard"] = _summary(
            [c - r - g for c, r, g in zip(complete, refill, guard)])
        out["outside (paired - complete)"] = _summary([d - c for d, c in zip(paired, complete)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--mode", default="refill", help="the plugin's mode to time")
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall: time.perf_counter; cpu: the thread's CPU clock")
    parser.add_argument("--pieces", action="store_true",
                        help="also time the plugin's pieces (a separate run: probes cost)")
    args = parser.parse_args()
    now = time.thread_time if args.clock == "cpu" else time.perf_counter
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"  # before vLLM is imported
    os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
    os.environ.setdefault("DERIVGRAPH_SPECS",
                          str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
    logging.basicConfig(level=logging.WARNING)
    sys.path.insert(0, str(ROOT))

    import torch
    from vllm.model_executor.model_loader.reload import inplace

    if args.clock == "cpu":
        torch.set_num_threads(1)  # the thread's CPU clock must see every op's work

    from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
    from vllm_integration import session

    times: dict[str, list[float]] = {"off": [], args.mode: []}
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        plan = session.plan_for(model)
        if plan is None:
            raise SystemExit("the plugin compiled no plan: is VLLM_PLUGINS=derivgraph set?")

        def reload(i: int, mode: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            items = iter(weights[i % 2].items())
            start = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            return now() - start

        probes = _Probes(now)
        if args.pieces:
            _probe(probes, session, plan)
        for mode in times:  # warm-up: one reload each
            reload(1, mode)
        probes.clear()
        gc.collect()
        gc.freeze()  # as vLLM does after start-up: collections scan only what reloads allocate
        for i in range(args.repeat):
            order = list(times) if i % 2 == 0 else list(times)[::-1]
            for mode in order:
                times[mode].append(reload(i, mode) * 1e3)
        pieces = _pieces(probes, times["off"], times[args.mode]) if args.pieces else None
        # the last timed reload leaves derived tensors current when the plugin ran last
        os.environ["DERIVGRAPH_VLLM_MODE"] = args.mode
        reload(args.repeat, args.mode)
        moved = plan.moved()
    off = statistics.median(times["off"])
    on = statistics.median(times[args.mode])
    result = {
        "model": "tiny LlamaForCausalLM (tests/fixtures/vllm_llama_reload.py)",
        "derived": len(plan), "repeat": args.repeat, "mode": args.mode, "clock": args.clock,
        "torch": torch.__version__, "vllm_off_ms": round(off, 3),
        "vllm_plugin_ms": round(on, 3), "plugin_over_off": round(on / off, 3),
        "min_off_ms": round(min(times["off"]), 3),
        "min_plugin_ms": round(min(times[args.mode]), 3),
        "min_plugin_over_off": round(min(times[args.mode]) / min(times["off"]), 3),
        **{f"q{q}_{k}_ms": round(_quantile(times[m], q), 3)
           for q in (10, 25) for k, m in (("off", "off"), ("plugin", args.mode))},
        **{f"q{q}_plugin_over_off": round(_quantile(times[args.mode], q)
                                         / _quantile(times["off"], q), 3) for q in (10, 25)},
        "paired_plugin_cost_ms": round(statistics.median(
            a - b for a, b in zip(times[args.mode], times["off"])), 3),
        "moved_after_plugin_reload": len(moved),
        **({"pieces_us": pieces} if pieces is not None else {}),
        "runs_ms": {k: [round(t, 3) for t in v] for k, v in times.items()},
    }
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(text)  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
