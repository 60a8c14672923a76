"""Scratch: collections per reload (gc.get_stats deltas) and objects allocated (gc.get_count
after a collection), off after off vs refill after refill, after gc.freeze as the bench."""
import gc, os, sys, tempfile
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
torch.set_num_threads(1)
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    def reload(i, mode):
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for i in range(30):
        reload(i, "refill"); reload(i, "off")
    gc.collect(); gc.freeze()
    for mode in ("off", "refill", "off", "refill"):
        for i in range(5):
            reload(i, mode)
        s0 = [d["collections"] for d in gc.get_stats()]
        for i in range(100):
            reload(i, mode)
        s1 = [d["collections"] for d in gc.get_stats()]
        gc.disable(); gc.collect()
        net = []
        for i in range(20):
            c0 = gc.get_count()[0]; reload(i, mode); net.append(gc.get_count()[0] - c0)
        gc.enable()
        print(mode, "collections per 100 reloads (gen0, gen1, gen2):", [b - a for a, b in zip(s0, s1)], "net allocations per reload (gen0 count):", sorted(net)[10])
