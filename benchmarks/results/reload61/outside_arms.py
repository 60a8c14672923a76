"""The plugin's cost outside ``complete`` by subtraction (task item 1); one clock pair around
the plugin arm's completion only.

One process, the tiny vLLM Llama; each round runs every arm once (order rotated and reversed,
thread CPU clock): ``off``; ``plugin`` (refill mode); ``hooks`` (the plugin's hooks and session
scopes, the completion skipped: ``session.complete`` a no-op); ``hooks-norec`` (as ``hooks``,
with the per-weight name recording ``reload_wrappers._recording`` a pass-through). Prints the
median of each arm's per-round difference to ``off`` (us) and in how many of K blocks of rounds
that median is above zero.

    PYTHONPATH=. python3 benchmarks/results/reload61/outside_arms.py 400
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


def main(rounds: int, blocks: int = 8) -> None:
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import reload_wrappers, session

        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        assert session.plan_for(model) is not None
        complete, recording = session.complete, reload_wrappers._recording
        inner, spent = session._complete, []

        def timed_complete(*a: Any, **k: Any) -> Any:
            t = now()
            try:
                return inner(*a, **k)
            finally:
                spent.append((now() - t) * 1e6)
        session._complete = timed_complete

        def passthrough(weights: Any, sink: list[str], model: Any = None) -> Any:
            return weights

        def reload(i: int, arm: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if arm == "off" else "refill"
            if arm.startswith("hooks"):
                session.complete = lambda *a, **k: None
            if arm == "hooks-norec":
                reload_wrappers._recording = passthrough
            items = iter(weights[i % 2].items())
            try:
                start = now()
                with torch.no_grad():
                    inplace.reload_weights(vc, model, items, None, True)
                return (now() - start) * 1e6
            finally:
                session.complete, reload_wrappers._recording = complete, recording

        arms = ["off", "plugin", "hooks", "hooks-norec"]
        times: dict[str, list[float]] = {a: [] for a in arms}
        done: list[float] = []  # the plugin arm's completion (session._complete), us
        for i in range(3):
            for a in arms:
                reload(i, a)
        # the hooks arms leave derived tensors stale: a plugin reload follows each round
        gc.collect()
        gc.freeze()
        for i in range(rounds):
            order = arms[i % 4:] + arms[:i % 4]
            if (i // 4) % 2:
                order = order[::-1]
            for a in order:
                spent.clear()
                times[a].append(reload(i, a))
                if a == "plugin":
                    done.append(spent[0])
    print(f"rounds {rounds}, load {os.getloadavg()[0]:.1f}")
    size = rounds // blocks
    for a in arms[1:]:
        d = [x - y for x, y in zip(times[a], times["off"])]
        above = sum(statistics.median(d[k * size:(k + 1) * size]) > 0 for k in range(blocks))
        print(f"{a:12s} - off: median {statistics.median(d):7.1f} us, q25 "
              f"{statistics.quantiles(d, n=4)[0]:7.1f}, blocks above 0: {above} of {blocks}")
    for a, b in (("plugin", "hooks"), ("hooks", "hooks-norec")):
        d = [x - y for x, y in zip(times[a], times[b])]
        above = sum(statistics.median(d[k * size:(k + 1) * size]) > 0 for k in range(blocks))
        print(f"{a:12s} - {b}: median {statistics.median(d):7.1f} us, blocks above 0: "
              f"{above} of {blocks}")
    d = [x - y - c for x, y, c in zip(times["plugin"], times["off"], done)]
    print(f"plugin - off - complete (outside): median {statistics.median(d):7.1f} us; "
          f"complete median {statistics.median(done):7.1f}")
    print("medians (us):", {a: round(statistics.median(v), 1) for a, v in times.items()})


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
