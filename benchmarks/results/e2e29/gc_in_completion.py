"""Garbage collections during the plugin's completion and outside it (e2e29: none in 100 reloads,
so no collection cost sits in the completion). usage: PYTHONPATH=. python3 gc_in_completion.py"""
import os, sys, time, gc, tempfile, logging, statistics
from pathlib import Path
ROOT = Path(os.getcwd())
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.ERROR)
sys.path.insert(0, str(ROOT))
import torch
torch.set_num_threads(1)
from vllm.model_executor.model_loader.reload import inplace
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
from vllm_integration import session
inside = [False]; ev = []; st = {}
def cb(phase, info):
    if phase == "start": st["t"] = time.thread_time_ns()
    else: ev.append((inside[0], info["generation"], (time.thread_time_ns() - st["t"]) / 1e3))
orig = session._complete
def timed(*a, **k):
    inside[0] = True
    try: return orig(*a, **k)
    finally: inside[0] = False
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(4):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    session._complete = timed
    gc.collect(); gc.freeze(); gc.callbacks.append(cb)
    N = 100
    for i in range(N):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    gc.callbacks.remove(cb)
    for where in (True, False):
        e = [x for x in ev if x[0] == where]
        print("inside" if where else "outside", "collections/reload", len(e) / N, "by gen", {g: sum(1 for x in e if x[1] == g) for g in range(3)}, "us/reload", sum(x[2] for x in e) / N)
