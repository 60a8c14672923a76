"""Each AtAddresses check of a steady-state plugin reload on the tiny vLLM Llama (plugin reloads
back to back, refill mode): by its tensor count, which path answered (the words' gather, or
the exact compare) and its thread CPU time (us, median of 200 reloads).

    PYTHONPATH=$TREE python3 benchmarks/results/reload62/scratch/probe_joint.py
"""

import gc
import logging
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph import addresses  # noqa: E402

logging.basicConfig(level=logging.ERROR)
torch.set_num_threads(1)
now = time.thread_time
rec: list[tuple[int, str, float, float]] = []


def intact(self: addresses.AtAddresses) -> bool:
    t0 = now()
    words = self.words
    kept = words is not None and words.kept()
    t1 = now()
    if kept:
        rec.append((len(self.tensors), "kept", (t1 - t0) * 1e6, 0.0))
        return True
    equal = addresses.addresses_equal(self.tensors, self.ptrs, self._indices)
    rec.append((len(self.tensors), "exact", (t1 - t0) * 1e6, (now() - t1) * 1e6))
    return equal


with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(20):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    addresses.AtAddresses.intact = intact  # after the words were taken
    gc.collect()
    gc.freeze()
    for i in range(200):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
by: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
for n, kind, a, b in rec:
    by[(n, kind)].append((a, b))
for key, values in by.items():
    print(key, len(values), f"gather med {statistics.median(a for a, _ in values):.1f}",
          f"exact med {statistics.median(b for _, b in values):.1f}")
