"""Steady-state cost of each arm, in one process: reloads run in blocks of ``BLOCK`` of the same
arm (the first of each block, a transition, is dropped), arms rotated per cycle, so every kept
reload is "arm after the same arm" (the bench's ``steady_state_delta_us`` rule, with n per arm
instead of 1 in 4 rounds). Thread CPU clock, the tiny vLLM Llama. Arms: ``off``; ``refill`` (the
plugin); diagnostics (not exact, they only say where the steady state goes): ``noguard`` (the
plugin with the guard's restore skipped), ``hooks`` (the plugin's hooks, the completion a no-op:
derived tensors left stale, refilled by the next block's dropped first reload); any arm of
:data:`VARIANTS` (a patch made for that reload and undone after it).
Prints, per arm, n, min / q25 / median (us) and median - off's; and per cycle the sign of
(arm - off) block medians.

    PYTHONPATH=. python3 benchmarks/results/reload62/steady_arms.py CYCLES [ARMS]
    (ARMS comma-separated, default off,refill,noguard,hooks; BLOCK=5 by env)
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")


def _patch(owner: Any, name: str, value: Any) -> Any:
    old = owner.__dict__[name]
    setattr(owner, name, value)
    return lambda: setattr(owner, name, old)


def _no_tensor_guard() -> Any:
    """Diagnostic: the take's layout check by its sweeps only (no TorchDynamo guard)."""
    from derivgraph.runtime.engine import Layouts
    return _patch(Layouts, "match", Layouts.swept)


def _guard_storage_trusted() -> Any:
    """Diagnostic (not exact): the guard's startup-storage check not run."""
    from derivgraph.guard.guard import Guard
    return _patch(Guard, "storage_kept", lambda self: True)


def _no_after() -> Any:
    """The guard's tensors not handed to the plan (its own address check, as before reload62):
    the plugin with this tree's code, the joint check of ``Holders.after`` off."""
    from derivgraph.guard.guard import Guard
    return _patch(Guard, "addresses", property(lambda self: None))


VARIANTS = {"notg": _no_tensor_guard, "nostore": _guard_storage_trusted,
            "noafter": _no_after}


def _q(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(cycles: int, arms: list[str]) -> None:
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    block = int(os.environ.get("BLOCK", "5"))
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import session

        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        assert session.plan_for(model) is not None
        state = session.state_for(model)
        complete = session.complete

        def reload(i: int, arm: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if arm == "off" else "refill"
            guard = None
            if arm == "noguard":
                guard, state.guard = state.guard, None
            if arm == "hooks":
                session.complete = lambda *a, **k: None
            undo = VARIANTS[arm]() if arm in VARIANTS else None
            items = iter(weights[i % 2].items())
            try:
                start = now()
                with torch.no_grad():
                    inplace.reload_weights(vc, model, items, None, True)
                return (now() - start) * 1e6
            finally:
                session.complete = complete
                if undo is not None:
                    undo()
                if guard is not None:
                    state.guard = guard

        for i, arm in enumerate(arms * 2):
            reload(i, arm)
        gc.collect()
        gc.freeze()
        out: dict[str, list[float]] = {a: [] for a in arms}
        blocks: dict[str, list[float]] = {a: [] for a in arms}
        i = 0
        for c in range(cycles):
            order = arms[c % len(arms):] + arms[:c % len(arms)]
            if (c // len(arms)) % 2:
                order = order[::-1]
            for arm in order:
                kept = []
                for k in range(block):
                    t = reload(i, arm)
                    i += 1
                    if k:
                        kept.append(t)
                out[arm] += kept
                blocks[arm].append(statistics.median(kept))
    print(f"cycles {cycles} block {block} load {os.getloadavg()[0]:.1f}")
    off = statistics.median(out["off"]) if "off" in out else 0.0
    for arm in arms:
        v = out[arm]
        med = statistics.median(v)
        line = f"{arm:8s} n {len(v):5d} min/q25/med {min(v):8.1f} {_q(v, 25):8.1f} {med:8.1f}" \
               f"  med-off {med - off:7.1f}"
        if arm != "off" and "off" in out:
            above = sum(a > b for a, b in zip(blocks[arm], blocks["off"]))
            line += f"  block med > off in {above} of {len(blocks[arm])}"
        if arm not in ("off", "refill") and "refill" in out:
            diffs = [a - b for a, b in zip(blocks[arm], blocks["refill"])]
            line += f" | vs refill: paired block med {statistics.median(diffs):7.1f}, lower in " \
                    f"{sum(d < 0 for d in diffs)} of {len(diffs)}"
        print(line)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50,
         sys.argv[2].split(",") if len(sys.argv) > 2 else ["off", "refill", "noguard", "hooks"])
