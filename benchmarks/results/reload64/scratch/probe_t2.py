"""As probe_t.py, for the rebind's and moved()'s functions.

    PYTHONPATH=. python3 benchmarks/results/reload64/scratch/probe_t2.py 300
"""

import gc
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

from derivgraph.runtime import holders as ho
from derivgraph.runtime import plan as pl

logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
T = {}
gcn = [0]


def cb(phase, info):
    if phase == "start":
        gcn[0] += 1


gc.callbacks.append(cb)


def wrap(cls, name):
    orig = getattr(cls, name)
    key = f"{cls.__name__}.{name}"
    T[key] = []

    def f(*a, **k):
        t = time.thread_time_ns()
        try:
            return orig(*a, **k)
        finally:
            T[key].append((time.thread_time_ns() - t) / 1e3)

    setattr(cls, name, f)


from derivgraph.runtime import accessors as ac  # noqa: E402

for cls, name in [
    (ho.Holders, "rebind"),
    (ho.Holders, "_rebind_stale"),
    (ac.HolderTable, "rebind"),
    (ac.HolderTable, "settle"),
    (ac.HopTable, "settle"),
    (ho.Holders, "_swept_in_full"),
    (ac.HolderTable, "stale"),
    (ho.Holders, "_scalars_current"),
    (ho.Holders, "moved"),
    (ho.Holders, "_holders_at_startup"),
    (ho.Holders, "_unproven"),
    (ho.Holders, "_startup_sources"),
    (ho.Holders, "_holders_proven"),
    (pl.Plan, "rebind"),
    (pl.Plan, "_set_scalars"),
    (pl.Plan, "run"),
]:
    if cls is not None:
        wrap(cls, name)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(20):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for v in T.values():
        v.clear()
    gcn[0] = 0
    t0 = time.thread_time_ns()
    for i in range(n):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    print(
        "reload median-ish total per reload us",
        (time.thread_time_ns() - t0) / 1e3 / n,
        "gc collections/reload",
        gcn[0] / n,
    )
for k, v in T.items():
    if v:
        print(
            f"{k:40s} calls/reload {len(v) / n:.1f} median {statistics.median(v):7.1f}"
            f" min {min(v):7.1f}"
        )
