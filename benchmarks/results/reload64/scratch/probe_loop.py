"""Dropped idea: the take's four copies by a Python loop of ``copy_`` instead of
``_foreach_copy_``; blocks of 5 reloads per arm, the plan's run time (thread CPU, us).

    PYTHONPATH=. python3 benchmarks/results/reload64/scratch/probe_loop.py 600
"""

import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
import numpy as np
import torch
from vllm.model_executor.model_loader.reload import inplace

from derivgraph.dict_slots import _BASE, _HALVES
from derivgraph.runtime import plan as pl

logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
orig = torch._foreach_copy_
arm = ["torch"]
ptr = torch.Tensor.data_ptr
cache = {}


def fc(a, b):
    if len(a) == 4 and arm[0] == "loop":
        for x, y in zip(a, b):
            x.copy_(y)
        return
    if len(a) == 4 and arm[0] == "numpy" and all(x.dim() == 0 for x in a):
        key = id(a[0])
        ours = cache.get(key)
        if ours is None:
            ours = cache[key] = (np.array(list(map(ptr, a)), dtype=np.intp) - _BASE) >> 2
        theirs = (np.array(list(map(ptr, b)), dtype=np.intp) - _BASE) >> 2
        _HALVES[ours] = _HALVES[theirs]
        return
    orig(a, b)


porig = pl.Plan.run
T = {"torch": [], "loop": []}


def run(self, *a, **k):
    t = time.thread_time_ns()
    r = porig(self, *a, **k)
    T[arm[0]].append((time.thread_time_ns() - t) / 1e3)
    return r


pl.Plan.run = run
n = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    torch._foreach_copy_ = fc
    for i in range(20 + n):
        if i == 20:
            T = {"torch": [], "loop": []}
        arm[0] = ("torch", "loop")[(i // 5) % 2]
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    # check values equal
    import gc

    from derivgraph import Plan

    p = [o for o in gc.get_objects() if isinstance(o, Plan)][0]
for k, v in T.items():
    print(k, len(v), "median", statistics.median(v), "q25", sorted(v)[len(v) // 4], "min", min(v))
