"""Scratch: the bench's own order (off / refill rotated and reversed, as reload_bench.measure),
counting per plugin reload whether the guard's restore and the plan's refill fell back to the
library's path.

    PYTHONPATH=. python3 benchmarks/results/vllm68/scratch/falls.py ROUNDS
"""
import os, sys, tempfile
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
from derivgraph.guard import Guard
from derivgraph.runtime.plan import Plan
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
gcalls, pcalls = [], []
gslow, prun = Guard._restore_slow, Plan.run
def g(self, *a, **k):
    gcalls.append(1)
    return gslow(self, *a, **k)
def p(self, *a, **k):
    pcalls.append(1)
    return prun(self, *a, **k)
Guard._restore_slow = g
Plan.run = p
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    def reload(i, mode):
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        gcalls.clear(); pcalls.clear()
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        return ("G" if gcalls else "g") + ("P" if pcalls else "p")
    reload(1, "off"); reload(1, "refill")
    out = []
    prev = "refill"
    for i in range(rounds):
        arms = ["off", "refill"]
        arms = arms[i % 2:] + arms[:i % 2]
        order = arms if (i // 2) % 2 == 0 else arms[::-1]
        for m in order:
            r = reload(i, m)
            if m == "refill":
                out.append(("R" if prev == "refill" else "o") + r)
            prev = m
    print(" ".join(out))
    import collections
    print(collections.Counter(out))
