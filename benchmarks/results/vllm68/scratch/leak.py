"""Scratch: do tracked objects grow per refill reload (after a full collection)?"""
import gc, os, sys, tempfile, collections
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
    for mode in ("off", "refill"):
        for i in range(20): reload(i, mode)
        gc.collect()
        a = collections.Counter(type(o).__name__ for o in gc.get_objects())
        for i in range(100): reload(i, mode)
        gc.collect()
        b = collections.Counter(type(o).__name__ for o in gc.get_objects())
        print(mode, "growth over 100 reloads:", {k: b[k] - a[k] for k in b if b[k] != a[k]})
