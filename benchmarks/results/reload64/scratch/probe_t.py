"""Thread CPU time of the refill's and the guard's functions per steady-state reload (a timer
around each; ~0.5 us each added).

    PYTHONPATH=. python3 benchmarks/results/reload64/scratch/probe_t.py 300
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

from derivgraph import dict_slots as ds
from derivgraph.guard import guard as gu
from derivgraph.guard import sweep as sw
from derivgraph.guard import watch as wa
from derivgraph.runtime import engine as en
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


for cls, name in [
    (sw.Sweep, "settle"),
    (sw.Sweep, "dirty"),
    (sw.Sweep, "_gather"),
    (sw._Gather, "differing"),
    (ds.DictSlots, "suspects"),
    (sw.Sweep, "_verdict"),
    (wa.Watch if hasattr(wa, "Watch") else None, "survey"),
    (pl.Plan, "_rest_for"),
    (ho.Holders, "owners_current_for"),
    (en.RefillTable, "take"),
    (pl.Plan, "_take_engine_values"),
    (ho.Holders, "sources_intact"),
    (ho.Holders, "rebind"),
    (ho.Holders, "moved"),
    (pl.Plan, "_set_scalars"),
    (gu.Guard, "restore"),
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
