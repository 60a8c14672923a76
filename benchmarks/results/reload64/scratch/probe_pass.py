"""The refill's copies split by kind in the steady state (thread CPU, us): the take's
``_foreach_copy_`` and the partial pass's, the pass's split into its transposes, rows and stages.

    PYTHONPATH=. python3 benchmarks/results/reload64/scratch/probe_pass.py 200
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
import torch
from vllm.model_executor.model_loader.reload import inplace

logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
orig = torch._foreach_copy_
T = {}


def fc(a, b):
    if len(a) == 10:
        ks = [(0, 2, "transpose2"), (2, 4, "rows2"), (4, 10, "stage6")]
    else:
        ks = [(0, len(a), f"take{len(a)}")]
    for s, e, k in ks:
        t = time.thread_time_ns()
        orig(a[s:e], b[s:e])
        T.setdefault(k, []).append((time.thread_time_ns() - t) / 1e3)
    if len(a) == 10 and "shapes" not in T:
        T["shapes"] = [
            (tuple(x.shape), x.stride(), tuple(y.shape), y.stride(), x.dtype, y.dtype)
            for x, y in zip(a, b)
        ]


n = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    torch._foreach_copy_ = fc
    for i in range(20 + n):
        if i == 20:
            T = {"shapes": T.get("shapes")}
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
for k, v in T.items():
    if k == "shapes":
        for s in v:
            print(s)
    else:
        print(k, len(v), "median", statistics.median(v), "min", min(v))
