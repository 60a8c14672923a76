"""Scratch: what line 142 of completion.complete costs in steady reloads (thread CPU)."""
import os, sys, tempfile, time, statistics
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
torch.set_num_threads(1)
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
now = time.thread_time_ns
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import completion, session
    from derivgraph.guard import Guard
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    ts = {"addresses": [], "check_folds": []}
    prop = Guard.addresses
    def timed_get(self):
        a = now(); r = prop.fget(self); ts["addresses"].append(now() - a); return r
    Guard.addresses = property(timed_get)
    cf = completion.check_folds
    def timed_cf(*a):
        s = now(); r = cf(*a); ts["check_folds"].append(now() - s); return r
    completion.check_folds = timed_cf
    for i in range(330):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for k, v in ts.items():
        print(k, len(v), "median us", statistics.median(v[30:]) / 1e3, "q90", statistics.quantiles(v[30:], n=10)[-1] / 1e3)
