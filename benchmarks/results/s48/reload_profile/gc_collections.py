"""How many garbage collections run inside N reloads of the tiny vLLM Llama, and inside the
plugin's completion, with the plugin off and in refill mode (``gc.callbacks``). See README.txt.

    PYTHONPATH=$PWD python3 benchmarks/results/s48/reload_profile/gc_collections.py
"""

import gc
import logging
import os
import tempfile
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from vllm_integration import session  # noqa: E402

RELOADS = 200
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    state = {"inside": False, "start": 0.0, "all": 0, "all_s": 0.0, "in": 0, "in_s": 0.0}

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            state["start"] = time.perf_counter()
            return
        took = time.perf_counter() - state["start"]
        state["all"] += 1
        state["all_s"] += took
        if state["inside"]:
            state["in"] += 1
            state["in_s"] += took

    complete = session._complete

    def marked(*args, **kwargs):
        state["inside"] = True
        try:
            return complete(*args, **kwargs)
        finally:
            state["inside"] = False

    session._complete = marked
    gc.collect()
    gc.freeze()
    gc.callbacks.append(on_gc)
    for mode in ("off", "refill"):
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        state.update({"all": 0, "all_s": 0.0, "in": 0, "in_s": 0.0})
        for i in range(RELOADS):
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        print(f"{mode}: collections per reload {state['all'] / RELOADS:.3f} "
              f"({state['all_s'] / RELOADS * 1e6:.1f} us), inside the completion "
              f"{state['in'] / RELOADS:.3f} ({state['in_s'] / RELOADS * 1e6:.1f} us)")
