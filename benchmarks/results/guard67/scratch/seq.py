"""Scratch: which reloads of a plain alternating sequence fall back (and why: suspects)."""
import os, sys, tempfile
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
from derivgraph.guard import Guard
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
calls = []
slow = Guard._restore_slow
def counted(self, *a, **k):
    calls.append(1)
    return slow(self, *a, **k)
Guard._restore_slow = counted
pattern = sys.argv[1] if len(sys.argv) > 1 else "0101010101"
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    guard = session.state_for(model).guard
    out = []
    for c in pattern:
        calls.clear()
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[int(c)].items()), None, True)
        sweep = guard.watch.sweep
        g = sweep.gathers.get(sweep.whole)
        out.append(f"{c}:{'S' if calls else 'F'}{len(g.columns[0]) if g else '-'}")
    print(" ".join(out))
