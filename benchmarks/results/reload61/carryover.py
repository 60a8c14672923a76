"""Does a reload's cost depend on the arm of the reload before it? (task item 1: the plugin's
cost outside its completion.) One process, the tiny vLLM Llama, reloads in the order
off off plugin plugin off off ... so that each transition (off->off, off->plugin,
plugin->plugin, plugin->off) occurs equally often; thread CPU clock; the plugin arm's completion
(``session._complete``) timed as well. Prints, per transition, min / q25 / median (us).

    PYTHONPATH=. python3 benchmarks/results/reload61/carryover.py 2000
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


def main(reloads: int) -> None:
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
        assert session.plan_for(model) is not None
        inner, spent = session._complete, []

        def timed_complete(*a: Any, **k: Any) -> Any:
            t = now()
            try:
                return inner(*a, **k)
            finally:
                spent.append((now() - t) * 1e6)
        session._complete = timed_complete

        def reload(i: int, mode: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            items = iter(weights[i % 2].items())
            start = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            return (now() - start) * 1e6

        arm = ["off", "off", "refill", "refill"]
        for i in range(8):
            reload(i, arm[i % 4])
        spent.clear()
        gc.collect()
        gc.freeze()
        if os.environ.get("GCOFF"):  # diagnostic: is the carry-over the collector's?
            gc.disable()
        out: dict[str, list[float]] = {}
        done: dict[str, list[float]] = {}
        prev = arm[7 % 4]
        for i in range(reloads):
            mode = arm[i % 4]
            t = reload(i, mode)
            key = f"{prev}->{mode}"
            out.setdefault(key, []).append(t)
            if spent:
                done.setdefault(key, []).append(spent.pop())
            prev = mode
    print(f"GCOFF={os.environ.get('GCOFF', '')} reloads {reloads}, load {os.getloadavg()[0]:.1f}")
    for key in sorted(out):
        v = out[key]
        line = f"{key:15s} n {len(v):5d} reload min/q25/med {min(v):8.1f} {_q(v, 25):8.1f} " \
               f"{statistics.median(v):8.1f}"
        if key in done:
            c = done[key]
            line += f" | complete {min(c):6.1f} {_q(c, 25):6.1f} {statistics.median(c):6.1f}"
        print(line)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
