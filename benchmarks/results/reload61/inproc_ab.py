"""In-process A/B of ``vllm_integration.completion.complete`` on the tiny vLLM Llama (refill
mode): one process, one model; each iteration is an ``off`` reload then a plugin reload whose
completion alternates between the base tree's ``complete`` (A: ``completion.py`` read from
BASE and loaded as a module of its own, its imports resolved in this tree) and this tree's (B).
Thread CPU clock. Prints per arm min / q25 / median of the completion (``session._complete``),
of the plugin reload and of ``plugin - off``, and in how many of K blocks B's median is lower.

    PYTHONPATH=. python3 benchmarks/results/reload61/inproc_ab.py /tmp/base_reload61 1000
"""

from __future__ import annotations

import gc
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _q(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(base: Path, rounds: int, blocks: int = 8) -> None:
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import completion, session

        arms = {"A": _load(base / "vllm_integration" / "completion.py",
                           "base_completion").complete,
                "B": completion.complete}
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        assert session.plan_for(model) is not None
        inner = session._complete
        spent: list[float] = []

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

        out: dict[str, dict[str, list[float]]] = {
            a: {"complete": [], "plugin": [], "paired": []} for a in arms}
        for i in range(6):
            session.complete = arms["AB"[i % 2]]
            reload(i, "off")
            reload(i, "refill")
        spent.clear()
        gc.collect()
        gc.freeze()
        for i in range(2 * rounds):
            arm = "AB"[(i + i // 2) % 2]  # A B B A A B B A ...: each arm after each equally
            session.complete = arms[arm]
            off = reload(i, "off")
            on = reload(i, "refill")
            out[arm]["complete"].append(spent.pop())
            out[arm]["plugin"].append(on)
            out[arm]["paired"].append(on - off)
            assert not spent
    print(f"rounds {rounds} an arm, load {os.getloadavg()[0]:.1f}, base {base}")
    size = rounds // blocks
    for key in ("complete", "plugin", "paired"):
        a, b = out["A"][key], out["B"][key]
        lower = sum(statistics.median(b[k * size:(k + 1) * size])
                    < statistics.median(a[k * size:(k + 1) * size]) for k in range(blocks))
        print(f"{key:9s} A min/q25/med {min(a):8.1f} {_q(a, 25):8.1f} {statistics.median(a):8.1f}"
              f" | B {min(b):8.1f} {_q(b, 25):8.1f} {statistics.median(b):8.1f}"
              f" | B-A med {statistics.median(b) - statistics.median(a):+7.1f}, q25 "
              f"{_q(b, 25) - _q(a, 25):+7.1f}; B lower in {lower} of {blocks} blocks")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
