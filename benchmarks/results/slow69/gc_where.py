"""Issue 20.5: where the cyclic collector runs during reloads of the tiny vLLM Llama, by transition.

    PYTHONPATH=. python3 benchmarks/results/slow69/gc_where.py [ROUNDS]

As ``vllm_part.py pattern`` (30 warm-up refills, ``gc.collect(); gc.freeze()``, rounds of
``off off off refill refill refill off off``), untimed: a ``gc.callbacks`` hook takes, at each
collection's start, the generation, the reload's transition (``prev>arm``) and the Python stack
(innermost frames first). Prints per transition the collections by generation and, per
collection site, how often: the innermost frame in ``derivgraph/`` or ``vllm_integration/``
(the plugin) and the innermost in ``vllm/`` (vLLM), to say whose allocations trip it.
"""
from __future__ import annotations

import collections
import gc
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
torch.set_num_threads(1)
label = ["warm-up"]
sites: list[tuple[str, int, str, str]] = []


def innermost(frame: Any, parts: tuple[str, ...]) -> str:
    while frame is not None:
        path = frame.f_code.co_filename
        if any(p in path for p in parts):
            short = path.split("/site-packages/")[-1].split("/slow69/")[-1]
            return f"{short}:{frame.f_code.co_name}:{frame.f_lineno}"
        frame = frame.f_back
    return "-"


def on_gc(stage: str, info: dict[str, Any]) -> None:
    if stage != "start":
        return
    frame = sys._getframe(1)
    plugin = innermost(frame, ("/derivgraph/", "/vllm_integration/"))
    vllm = innermost(frame, ("/vllm/",))
    sites.append((label[0], info["generation"], plugin, vllm))


with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")

    def reload(i: int, mode: str) -> None:
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)

    for i in range(30):
        reload(i, "refill")
    gc.collect()
    gc.freeze()
    gc.callbacks.append(on_gc)
    previous, i = "refill", 0
    counts: collections.Counter[str] = collections.Counter()
    for _ in range(ROUNDS):
        for arm in ("off", "off", "off", "refill", "refill", "refill", "off", "off"):
            label[0] = f"{previous}>{arm}"
            counts[label[0]] += 1
            reload(i, arm)
            i += 1
            previous = arm
    label[0] = "after"
    gc.callbacks.remove(on_gc)
    print(f"load {os.getloadavg()[0]:.2f}; {ROUNDS} rounds; reloads per transition {dict(counts)}")
    by = collections.Counter((t, g) for t, g, _, _ in sites)
    for (t, g), n in sorted(by.items()):
        print(f"  {t:14s} gen{g}: {n}")
    print("collection sites (transition, generation, plugin's innermost frame, vLLM's innermost):")
    for key, n in collections.Counter(sites).most_common(12):
        print(f"  {n:4d}  {key}")
