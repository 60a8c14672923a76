"""Which part of a plugin reload slows the reload after it? One process, the tiny vLLM Llama;
each step runs a "prior" reload then an ``off`` reload and times the ``off`` one (thread CPU
clock). Priors, rotated: ``off``; ``plugin`` (refill mode); ``hooks`` (the plugin's hooks and
scopes, ``session.complete`` a no-op); ``no-guard`` (the plugin with the guard's restore
skipped); ``refill-only`` (the completion replaced by ``plan.refill(verify=True)`` alone).
``TOUCH=1``: priors ``off``, ``refill-only`` and an ``off`` reload followed (untimed) by a read
of 256 KiB or 2 MiB of other memory (is the reload after sensitive to what was touched before?),
or by one 64 KiB tensor copy into another buffer (the refill writes 65552 bytes).
``PIECES=1``: priors ``off``, ``refill-only`` and an ``off`` reload followed (untimed) by one
piece of the refill run alone: the whole ``plan.refill``, the source check, the take, the
partial pass, ``moved()``, the rebind, the scalars' read.
Prints min / q25 / median of the ``off`` reload after each prior and its median less the one
after ``off``.

    PYTHONPATH=. python3 benchmarks/results/reload61/carry_bisect.py 500
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


def _q(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(rounds: int) -> None:
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import session

        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        plan = session.plan_for(model)
        assert plan is not None
        complete = session.complete
        state = session.state_for(model)

        import numpy as np
        scratch = {"off+touch256k": np.ones(256 * 1024 // 8), "off+touch2M": np.ones(2 << 17)}

        src, dst = torch.ones(16384), torch.empty(16384)  # 64 KiB each, like the refill's data

        from derivgraph.runtime.report import RunReport

        def partial() -> Any:
            rest = [v for k, v in plan._taken_rest.items() if k is not None][0]
            return plan.bindings["pass_for"](rest)

        pieces = {  # run untimed after an off reload: the footprint of one refill piece
            "off+refill": lambda: plan.refill(verify=True),
            "off+sources_intact": lambda: plan.holders.sources_intact(RunReport()),
            "off+take": lambda: plan.bindings["take_engine_values"](RunReport()),
            "off+pass": lambda: partial()(),
            "off+moved": lambda: plan.moved(),
            "off+rebind": lambda: plan.rebind(RunReport()),
            "off+set_scalars": lambda: plan.bindings["set_scalars"](list(plan.tensors.stages),
                                                                   RunReport()),
        }

        def reload(i: int, arm: str) -> float:
            if arm in pieces:
                t = reload(i, "off")
                pieces[arm]()
                return t
            if arm == "off+copy64k":  # an off reload, then (untimed) the refill's data traffic
                t = reload(i, "off")
                dst.copy_(src)
                return t
            if arm in scratch:  # an off reload, then (untimed) read that much other memory
                t = reload(i, "off")
                float(scratch[arm].sum())
                return t
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if arm == "off" else "refill"
            guard = state.guard
            if arm == "hooks":
                session.complete = lambda *a, **k: None
            elif arm == "refill-only":
                session.complete = lambda *a, **k: plan.refill(verify=True)
            elif arm == "no-guard":
                state.guard = None
            items = iter(weights[i % 2].items())
            try:
                start = now()
                with torch.no_grad():
                    inplace.reload_weights(vc, model, items, None, True)
                return (now() - start) * 1e6
            finally:
                session.complete, state.guard = complete, guard

        priors = ["off", "plugin", "hooks", "no-guard", "refill-only"]
        if os.environ.get("PIECES"):
            priors = ["off", "refill-only", *pieces]
        if os.environ.get("TOUCH"):
            priors = ["off", "refill-only", "off+touch256k", "off+touch2M", "off+copy64k"]
        for i in range(2):
            for p in priors:
                reload(i, p)
                reload(i, "off")
        gc.collect()
        gc.freeze()
        after: dict[str, list[float]] = {p: [] for p in priors}
        for i in range(rounds):
            k = i % len(priors)
            order = priors[k:] + priors[:k]
            for p in order:
                reload(i, p)
                after[p].append(reload(i + 1, "off"))
    print(f"rounds {rounds}, load {os.getloadavg()[0]:.1f}")
    base = statistics.median(after["off"])
    for p, v in after.items():
        med = statistics.median(v)
        print(f"off after {p:12s} min/q25/med {min(v):8.1f} {_q(v, 25):8.1f} "
              f"{med:8.1f}  median - after off {med - base:+7.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
